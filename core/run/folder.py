"""Run directories: where they live, what is in them, and how clients talk to the worker.

Layout (the contract other tools rely on; docs/architecture.md)::

    runs/<YYYYmmdd-HHMMSS>-<name>/
      plan.yaml  ds_config.json  hardware.json  events.jsonl  control.jsonl  status.json  worker.log
      checkpoints/  final/

``status.json`` is rewritten atomically by the worker (heartbeat); ``control.jsonl`` is appended by any
client and read by the worker; ``events.jsonl`` is appended by the worker and read by everyone.
"""
from __future__ import annotations

import errno
import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.atomic import atomic_write_json
from zerotui.core.errors import RunError
from zerotui.core.paths import default_runs_dir
from zerotui.core.run.run_files import FIX, damage, load_status
from zerotui.core.run.settled import last_finished, settled_state
from zerotui.core.timefmt import format_ago

CONTROL_COMMANDS = ("stop", "stop-now", "pause", "resume", "checkpoint")
#: A live worker rewrites status.json at least this often; older than 3× this means it is gone.
HEARTBEAT_S = 2.0
LOST_AFTER_S = 30.0


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def plan(self) -> Path: return self.root / "plan.yaml"
    @property
    def ds_config(self) -> Path: return self.root / "ds_config.json"
    @property
    def hardware(self) -> Path: return self.root / "hardware.json"
    @property
    def estimate(self) -> Path: return self.root / "estimate.json"
    @property
    def events(self) -> Path: return self.root / "events.jsonl"
    @property
    def control(self) -> Path: return self.root / "control.jsonl"
    @property
    def status(self) -> Path: return self.root / "status.json"
    @property
    def log(self) -> Path: return self.root / "worker.log"
    @property
    def checkpoints(self) -> Path: return self.root / "checkpoints"
    @property
    def final(self) -> Path: return self.root / "final"
    @property
    def name(self) -> str: return self.root.name


def new_run_dir(runs_dir: Path, name: str, now: Optional[float] = None) -> RunPaths:
    """Create ``runs_dir/<YYYYmmdd-HHMMSS>-<name>`` (suffixing -2, -3 ... if taken in the same second)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RunError(f"cannot create the runs folder {runs_dir}: {err.strerror}",
                       "choose another location with --runs-dir or ZEROTUI_RUNS_DIR") from None
    for i in range(1, 1000):
        root = runs_dir / (f"{stamp}-{name}" if i == 1 else f"{stamp}-{name}-{i}")
        try:
            root.mkdir()
        except FileExistsError:
            continue
        except OSError as err:
            raise RunError(f"cannot create run folder {root}: {err.strerror}",
                           "check free space and permissions of the runs folder") from None
        (root / "checkpoints").mkdir()
        return RunPaths(root)
    raise RunError(f"too many runs named {name!r} in one second", "use a different run name")


# -- status ---------------------------------------------------------------------------------------

def write_status(paths: RunPaths, **status: Any) -> None:
    status.setdefault("heartbeat", time.time())
    atomic_write_json(paths.status, status, fsync=False)


def read_status(paths: RunPaths) -> dict[str, Any]:
    """The last status the worker wrote, or {} when there is none (not started, or unreadable). Only
    well-typed fields come back (core/run/run_files.py): a tampered ``"pids": 5`` never reaches a caller."""
    return load_status(paths.status)[0]


def require_intact(paths: RunPaths, doing: str) -> None:
    """RunError naming the damaged file when the run folder has one (``doing``: "resume", "merge", ...)."""
    found = damage(paths.root)
    if found:
        raise RunError(f"run {paths.name} is damaged, cannot {doing} it: {found}", FIX)


def require_not_silent(paths: RunPaths, st: dict[str, Any]) -> None:
    """RunError when a lost run's own process still runs: silent, not gone. A resume beside it would train
    a second worker on the folder, and a stop through control.jsonl may never be read; a signal to its
    supervisor is the way."""
    alive = live_pids(st)
    if not alive:
        return
    many = len(alive) > 1
    raise RunError(f"run {paths.name} has gone silent (last heartbeat {format_ago(st.get('heartbeat'))}), but its "
                   f"process{'es' if many else ''} {', '.join(map(str, alive))} "
                   f"{'are' if many else 'is'} still running",
                   f"`kill {alive[0]}` asks its supervisor to stop the run (with a checkpoint, if the worker still "
                   f"can); `kill -9 {alive[0]}` if it does not end; then `zerotui resume {paths.name}`")


def _status_pids(st: dict[str, Any]) -> list[Any]:
    return st.get("pids") or ([st["pid"]] if st.get("pid") else [])


def pid_alive(pid: Any) -> bool:
    try:
        pid = int(pid)
        if pid <= 0:
            return False
        os.kill(pid, 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    # A zombie (exited, not yet reaped by its parent) still answers kill(0): look closer on Linux.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def run_state(paths: RunPaths, now: Optional[float] = None, finished: Any = ...) -> str:
    """One of: starting, running, paused, stopping, completed, stopped, failed, lost.

    'lost' means the worker is gone without writing a final state (killed, machine rebooted); 'damaged'
    that one of the folder's files is of the wrong kind or does not parse (``run_files.damage``).
    The stream's run_finished settles a state status.json left open (``settled.settled_state``);
    ``finished``: that event when the caller has read it already (the dashboard), else it is read here.
    """
    if damage(paths.root):
        return "damaged"
    st = read_status(paths)
    state = _status_state(paths, st, now)
    if state in ("completed", "stopped", "failed"):
        return state
    return settled_state(state, st, last_finished(paths.events) if finished is ... else finished)


def _status_state(paths: RunPaths, st: dict[str, Any], now: Optional[float]) -> str:
    state = st.get("state")
    if state in ("completed", "stopped", "failed"):
        return state
    if not st:
        # Judged by events.jsonl's own age, not the folder's: a resume's storage probe writes in the folder,
        # which made a run whose status.json was lost "starting" again at every resume (and refused it).
        return "lost" if paths.events.exists() and _age(paths.events, now) > LOST_AFTER_S else "starting"
    pids = _status_pids(st)
    alive = any(pid_alive(p) for p in pids) if pids else True
    beat = float(st.get("heartbeat") or 0)  # a number: read_status dropped anything else
    if not alive:
        return "lost"
    if (now or time.time()) - beat > LOST_AFTER_S:
        # Silent but alive before the worker's first heartbeat is a start still on its way: a spare
        # claimed while it imports, a launcher starting its ranks. Calling that lost would offer a resume
        # beside it. Silent once running is lost (the worker's main thread beats whatever training does).
        return "starting" if state == "starting" and live_pids(st) else "lost"
    return state or "running"


def write_final_status(paths: RunPaths, state: str, reason: str, step: Any, rank: Any, pids: list[int],
                       **extra: Any) -> None:
    """The run's final status.json (the supervisor's, or rank 0's when its supervisor is gone): the last
    heartbeat's fields, with the end's."""
    now = time.time()
    write_status(paths, **{**read_status(paths), "pid": os.getpid(), "pids": pids, "state": state, "reason": reason,
                           "phase": "finished", "step": step, "rank": rank, "finished": now, "heartbeat": now,
                           **extra})


def live_pids(st: dict[str, Any]) -> list[int]:
    """The status's processes still running that are the run's own: started before the status's last
    heartbeat, so a number reused by a later process (after a reboot) does not keep a run alive."""
    import psutil

    beat = float(st.get("heartbeat") or 0)
    out = []
    for pid in _status_pids(st):
        if not pid_alive(pid):
            continue
        try:
            created = psutil.Process(int(pid)).create_time()
        except (psutil.Error, TypeError, ValueError, OverflowError):
            continue
        # 2 s: the process clock (boot time + ticks) and time.time() may disagree by a second
        if not beat or created <= beat + 2.0:
            out.append(int(pid))
    return out


def _age(path: Path, now: Optional[float]) -> float:
    try:
        return (now or time.time()) - path.stat().st_mtime
    except OSError:
        return 0.0


# -- control --------------------------------------------------------------------------------------

def send_control(paths: RunPaths, command: str, **args: Any) -> dict[str, Any]:
    """Append one command to control.jsonl; the worker acknowledges it with a ``control_ack`` event."""
    if command not in CONTROL_COMMANDS:
        raise RunError(f"unknown control command {command!r}", f"use one of: {', '.join(CONTROL_COMMANDS)}")
    if not paths.root.is_dir():
        raise RunError(f"no run folder at {paths.root}", "`zerotui runs` lists the runs")
    entry = {"t": time.time(), "id": f"{os.getpid()}-{time.monotonic_ns()}", "command": command, **args}
    line = json.dumps(entry) + "\n"
    # O_APPEND makes each single write() land whole at the end, even with several writers. O_NOFOLLOW and
    # the regular-file check: commands go only into the run folder's own file, never through a symlink
    # to some other file (which the worker would not read anyway, see read_control).
    try:
        fd = os.open(paths.control, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO):  # a symlink; a FIFO nobody reads
            raise RunError(f"{paths.control} is not a plain file; control commands are only written to the "
                           "run folder's own control.jsonl", "remove it and send the command again") from None
        raise RunError(f"cannot write {paths.control} ({err.strerror})",
                       "check the run folder's permissions and free space") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunError(f"{paths.control} is not a plain file; control commands are only written to the run "
                       "folder's own control.jsonl", "remove it and send the command again")
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return entry


def read_control(paths: RunPaths, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """Commands appended after ``offset`` and the new offset; malformed or unknown lines are skipped."""
    try:
        # Only the run folder's own regular file is obeyed: a symlink (ELOOP with O_NOFOLLOW) or a FIFO
        # (which would block this read, and the worker's heartbeat with it) reads as "no commands".
        fd = os.open(paths.control, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # missing, a symlink, unreadable
        return [], offset
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return [], offset
        fh.seek(offset)
        chunk = fh.read()
    end = chunk.rfind(b"\n")
    if end < 0:
        return [], offset
    commands = []
    for raw in chunk[: end + 1].splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("command") in CONTROL_COMMANDS:
            commands.append(entry)
    return commands, offset + end + 1


# -- listing --------------------------------------------------------------------------------------

@dataclass
class RunSummary:
    paths: RunPaths
    state: str
    status: dict[str, Any] = field(default_factory=dict)
    damage: str = ""  # what is wrong with the folder when state is 'damaged'

    @property
    def name(self) -> str:
        return self.paths.name

    @property
    def live(self) -> bool:
        return self.state in ("starting", "running", "paused", "stopping")


def list_runs(runs_dir: Optional[Path] = None) -> list[RunSummary]:
    """Every run folder under ``runs_dir``, newest first."""
    base = runs_dir or default_runs_dir()
    if not base.is_dir():
        return []
    out = []
    for root in sorted((p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")), reverse=True):
        paths = RunPaths(root)
        if not (os.path.lexists(paths.plan) or os.path.lexists(paths.events)):
            continue
        out.append(summarise(paths))
    return out


def summarise(paths: RunPaths) -> RunSummary:
    """One run's summary; whatever is wrong in its folder makes it 'damaged', never an exception that
    would take every other run's listing (and every run-name lookup) down with it."""
    try:
        found = damage(paths.root)
        if found:
            return RunSummary(paths, "damaged", {}, found)
        return RunSummary(paths, run_state(paths), read_status(paths))
    except (OSError, ValueError) as err:
        return RunSummary(paths, "damaged", {}, f"{paths.name}: {err}")


def resolve_run(name: Optional[str], runs_dir: Optional[Path] = None, prefer_live: bool = True,
                note: Optional[Callable[[str], None]] = None) -> RunPaths:
    """A run by folder path, folder name, or unique name fragment; None picks the newest (live first).

    ``prefer_live`` (commands that act on a running run: stop, attach) also settles a fragment that
    matches several runs when exactly one of them is live; ``note`` is told which run that chose, so
    the command can say so. Otherwise several matches are refused, each named with its state."""
    base = runs_dir or default_runs_dir()
    if name is not None and not name.strip():  # an unset shell variable: never "the newest run" by accident
        raise RunError("the run's name is empty", "give a run's name or folder (`zerotui runs` lists them), or "
                                                  "leave it out for the newest run")
    if name:
        p = Path(name).expanduser()
        if p.is_dir() and (os.path.lexists(p / "plan.yaml") or os.path.lexists(p / "events.jsonl")):
            return RunPaths(p)
        runs = list_runs(base)
        exact = [r for r in runs if r.name == name]
        if exact:
            return exact[0].paths
        partial = [r for r in runs if name in r.name]
        if len(partial) == 1:
            return partial[0].paths
        live = [r for r in partial if r.live] if prefer_live else []
        if len(partial) > 1 and len(live) == 1:
            if note is not None:
                note(f"{name!r} matches {len(partial)} runs; {live[0].name} is the only live one: using it")
            return live[0].paths
        if len(partial) > 1:
            raise RunError(_several(name, partial), "give more of the run's name")
        if os.sep in name and p.is_dir():  # a folder given by its path, not a run's: say what it is
            raise RunError(f"{p} is not a zerotui run folder (it has no plan.yaml)",
                           "give a run's folder or name; `zerotui runs` lists the runs")
        raise RunError(f"no run named {name!r} in {base}", "`zerotui runs` lists the runs")
    runs = list_runs(base)
    if not runs:
        raise RunError(f"no runs in {base}", "start one with `zerotui train PRESET` or `zerotui`")
    if prefer_live:
        live = [r for r in runs if r.live]
        if live:
            return live[0].paths
    return runs[0].paths


def _several(name: str, matches: list[RunSummary], shown: int = 5) -> str:
    """The refusal of an ambiguous fragment: the first ``shown`` matches with their states, so the right
    one (the stopped run to resume, say) can be picked without a `zerotui runs` first."""
    names = ", ".join(f"{r.name} ({r.state})" for r in matches[:shown])
    more = f" and {len(matches) - shown} more" if len(matches) > shown else ""
    return f"{name!r} matches several runs: {names}{more}"
