"""Spare workers: a supervisor and its worker started before a run needs them, their libraries imported.

A new run spends most of its start on imports: torch, DeepSpeed, transformers (its model registry pulls
in torch.distributed.tensor, dynamo and sympy) and PEFT — 10–15 s on the H200's image before the first
byte of the model is read (docs/speed.md). A spare does that work ahead: ``start_spare`` launches
``python -m zerotui.core.run.supervisor --spare FOLDER -- python -m zerotui.core.run.worker --spare FOLDER``
detached, exactly as a run is launched, and the worker imports everything and waits. ``claim``, called by
the launch (``core/run/start.py``) after the run folder is written, hands one spare the run; the spare's
supervisor checks it, acknowledges, and from then on is that run's supervisor — the same process tree,
signals and final status as a run started cold (``spare_wait.py`` is the supervisor's side,
``spare_worker.py`` the worker's).

A spare serves a launch only when it would behave exactly as a cold start:

- the same environment for the worker (``env_key``: every variable, less those that only describe the
  terminal session) and the same Python;
- the same code: the spare compares the files of zerotui and its libraries with what it imported when
  the claim arrives, and refuses if any changed (``code_fingerprint``);
- one process (several ranks go through DeepSpeed's launcher, which starts its own workers), and the
  PyTorch allocator setting the spare already has (``core/plan/allocator.py``; it is read when CUDA is
  first used, which importing bitsandbytes may do): the user's, else expandable segments, which every
  plan gets.

Otherwise — or when no spare answers within ``ACK_S`` — the launch starts cold, as it always has. A spare
that nobody claims ends itself after ``ZEROTUI_SPARE_IDLE_S`` (default 15 min); ``ZEROTUI_SPARE=0`` turns
spares off, ``ZEROTUI_SPARE=1`` also where zerotui would not start one by itself (a sweep of CPU trials:
core/sweep/spares.py). The wizard starts one when it opens; ``zerotui spare`` starts, lists and stops them.

Spares live in ``<cache>/spares/`` (0700): one folder each with ``spare.json`` (pids, key), a ``claim``
FIFO, a ``lock`` that a claimer holds while it talks to the spare, and ``spare.log``.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from zerotui.core.atomic import atomic_write_json
from zerotui.core.paths import cache_root
from zerotui.core.run.folder import pid_alive
from zerotui.core.run.launcher import SUPERVISOR_MODULE, WORKER_MODULE, launcher_env
from zerotui.core.safe_read import load_json, read_text

SPARE_ENV = "ZEROTUI_SPARE"
IDLE_ENV = "ZEROTUI_SPARE_IDLE_S"
IDLE_S = 900.0
#: How long a launch waits for a spare's answer before it ends that spare and starts cold.
ACK_S = 10.0
INFO, FIFO, LOCK, LOG, ACK, READY = "spare.json", "claim", "lock", "spare.log", "ack.json", "ready"
#: Beside the spares' folders: the output of the last spare whose worker could not start.
FAILED_LOG = "last-failed-spare.log"
#: A claim is one JSON line; below PIPE_BUF it reaches the FIFO whole, never interleaved with another.
CLAIM_BYTES = 4096
#: Variables that only describe the terminal session: a spare started by the wizard in one SSH login can
#: serve `zerotui train` typed in the next. Nothing the worker's libraries read is among them.
SESSION_VARS = frozenset({
    "_", "OLDPWD", "PWD", "SHLVL", "TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLORTERM", "COLUMNS",
    "LINES", "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "SSH_AUTH_SOCK", "TMUX", "TMUX_PANE", "STY", "WINDOW",
    "XDG_SESSION_ID", "XDG_SESSION_TYPE", "XDG_SESSION_CLASS", "MOTD_SHOWN", "LS_COLORS", "PS1", "PROMPT_COMMAND",
    "MAIL", "LOGNAME", "WINDOWID", "DISPLAY", "XAUTHORITY", "TEXTUAL", "TEXTUAL_DRIVER",
})
#: The libraries a worker imports: a spare that imported an older copy of one must not train.
LIBRARIES = ("torch", "deepspeed", "transformers", "peft", "bitsandbytes", "datasets", "liger_kernel", "accelerate")
#: zerotui's own packages whose code a worker and a supervisor run.
OWN = ("zerotui.core",)


@dataclass(frozen=True)
class Spare:
    folder: Path
    supervisor: int
    worker: int
    key: str
    started: float
    ready: bool

    def to_dict(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "supervisor": self.supervisor, "worker": self.worker,
                "started": self.started, "ready": self.ready}


def enabled(env: Optional[Mapping[str, str]] = None) -> bool:
    return (os.environ if env is None else env).get(SPARE_ENV, "1").strip() not in ("0", "off", "no", "false")


def forced(env: Optional[Mapping[str, str]] = None) -> bool:
    """``ZEROTUI_SPARE=1`` said outright: spares also where zerotui would not start one by itself."""
    return (os.environ if env is None else env).get(SPARE_ENV, "").strip().lower() in ("1", "on", "yes", "true")


def idle_seconds(env: Optional[Mapping[str, str]] = None) -> float:
    try:
        return max(1.0, float((os.environ if env is None else env).get(IDLE_ENV, IDLE_S)))
    except ValueError:
        return IDLE_S


def spares_dir() -> Path:
    return cache_root() / "spares"


def worker_env(base: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The environment a run's supervisor and worker get (``core/run/start.py`` uses the same)."""
    env = dict(launcher_env(dict(os.environ if base is None else base)))
    env["PYTHONUNBUFFERED"] = "1"  # worker.log shows output as it happens, not in 8 KiB blocks
    return env


def env_key(env: Mapping[str, str], python: str = sys.executable) -> str:
    """What a spare and a launch must share: the interpreter and the worker's environment."""
    kept = sorted((k, v) for k, v in env.items() if k not in SESSION_VARS)
    return hashlib.sha256(json.dumps([os.path.realpath(python), kept]).encode()).hexdigest()[:32]


def code_fingerprint() -> str:
    """The files behind zerotui's core and the worker's libraries, by path, size and modification time
    (a reinstall or an edit changes one of them); taken without importing anything."""
    parts: list[Any] = []
    for name in OWN + LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if not origin:
            parts.append([name, None])
            continue
        root = Path(origin).parent
        files = sorted(root.glob("*.py")) if name in OWN else [Path(origin)]
        if name in OWN:
            files += sorted(root.glob("*/*.py")) + sorted(root.glob("*/*/*.py"))
        for f in [root, *files]:
            try:
                st = f.stat()
                parts.append([str(f), st.st_size, st.st_mtime_ns])
            except OSError:
                parts.append([str(f), None])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


# -- starting and listing --------------------------------------------------------------------------------
def _private_dir() -> Path:
    base = spares_dir()
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)  # claims name run folders: no other user may read or send them
    return base


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def read_spare(folder: Path) -> Optional[Spare]:
    """The spare in ``folder``, or None when it is not (yet, or any longer) a live spare."""
    try:
        info = load_json(read_text(folder / INFO, 64 << 10, follow=False))
        spare = Spare(folder, int(info["supervisor"]), int(info["worker"]), str(info["key"]),
                      float(info["started"]), (folder / READY).exists())
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    # A pid alone could be reused by anything: the supervisor's command line names this folder.
    if not pid_alive(spare.supervisor) or str(folder) not in cmdline(spare.supervisor):
        return None
    return spare


def list_spares() -> list[Spare]:
    """Live spares, oldest first; folders of spares that are gone are removed."""
    base = spares_dir()
    if not base.is_dir():
        return []
    found = []
    for folder in sorted(base.glob("spare-*")):
        if folder.is_symlink() or not folder.is_dir():
            continue
        spare = read_spare(folder)
        if spare is not None:
            found.append(spare)
        elif (folder / INFO).exists() or time.time() - _mtime(folder) > 60:
            _remove_if_unlocked(folder)  # written by a spare now gone, or never finished starting
    return sorted(found, key=lambda s: s.started)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def try_lock(folder: Path) -> Optional[int]:
    try:
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _remove_if_unlocked(folder: Path) -> None:
    fd = try_lock(folder)
    if fd is None:
        return
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(fd)


def start_spare(base_env: Optional[Mapping[str, str]] = None, worker: Optional[list[str]] = None) -> Optional[Spare]:
    """Start a spare for this environment unless one is there already (or spares are off); returns the
    one that serves it, or None. Never raises for a machine that cannot (a read-only cache). ``worker``
    replaces the worker's command (tests give a small stand-in that reads its claim)."""
    env = worker_env(base_env)
    if not enabled(env):
        return None
    key = env_key(env)
    for spare in list_spares():
        if spare.key == key:
            return spare
    try:
        folder = Path(tempfile.mkdtemp(prefix="spare-", dir=_private_dir()))
        os.mkfifo(folder / FIFO, 0o600)
        argv = [sys.executable, "-m", SUPERVISOR_MODULE, "--spare", str(folder), "--",
                *(worker or [sys.executable, "-m", WORKER_MODULE, "--spare", str(folder)])]
        with open(folder / LOG, "ab") as log, open(os.devnull, "rb") as devnull:
            proc = subprocess.Popen(argv, stdin=devnull, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, close_fds=True)
    except OSError:
        return None
    _reap_later(proc)
    return Spare(folder, proc.pid, 0, key, time.time(), False)


def start_in_background() -> None:
    """``start_spare`` on a thread (the wizard calls it as it opens: imports run while the user plans)."""
    import threading

    threading.Thread(target=start_spare, name="zerotui-spare", daemon=True).start()


def _reap_later(proc: subprocess.Popen) -> None:
    import threading

    threading.Thread(target=proc.wait, name=f"zerotui-reap-{proc.pid}", daemon=True).start()


def stop_spare(spare: Spare) -> bool:
    """End one spare if nobody has claimed it: SIGTERM to its supervisor, which ends its worker and
    removes its folder. Under the folder's lock, as a claimer talks to it: a spare that took a run a moment
    ago is that run's supervisor now, and a SIGTERM would stop the run."""
    fd = try_lock(spare.folder)
    if fd is None:
        return False  # a launch is talking to it: it is (being) claimed
    try:
        now = read_spare(spare.folder)
        if now is None or now.supervisor != spare.supervisor:
            return False  # gone, or it has answered a claim
        os.kill(spare.supervisor, signal.SIGTERM)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def stop_spares() -> list[Spare]:
    """End every live spare nobody has claimed."""
    return [spare for spare in list_spares() if stop_spare(spare)]


def wait_ready(spare: Spare, timeout: float) -> bool:
    """True once the spare's worker has imported its libraries (benchmarks and tests wait for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (spare.folder / READY).exists():
            return True
        if not pid_alive(spare.supervisor):
            return False
        time.sleep(0.1)
    return False


def write_info(folder: Path, worker_pid: int, key: str) -> None:
    """The spare's own record (its supervisor writes it once its worker is started)."""
    atomic_write_json(folder / INFO, {"supervisor": os.getpid(), "worker": worker_pid, "key": key,
                                      "started": time.time(), "code": code_fingerprint()}, fsync=False)


def write_ack(folder: Path, ok: bool, run: str, why: str = "") -> None:
    atomic_write_json(folder / ACK, {"ok": ok, "run": run, "why": why, "supervisor": os.getpid()}, fsync=False)


def claim_line(claim: Mapping[str, Any]) -> bytes:
    """What the supervisor passes to its worker: the run, and how to start on it."""
    return json.dumps({k: claim.get(k) for k in ("run", "resume", "cwd")}).encode() + b"\n"


def stored_fingerprint(folder: Path) -> Optional[str]:
    try:
        return str(load_json(read_text(folder / INFO, 64 << 10, follow=False))["code"])
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
