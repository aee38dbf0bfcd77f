"""Starting and resuming a run: checks, the run folder, and the detached supervisor and worker.

``start_run`` checks the plan (``input_check``, ``preflight``), writes what the worker needs
(``prepare.launch_files``: plan.yaml, ds_config.json, hardware.json, estimate.json) and starts the
supervisor (``run.supervisor``) with the worker, or DeepSpeed's launcher for several processes, as its
child, in its own session with its output appended to worker.log; then it returns at once. The run
outlives the process that started it: a closed terminal, a dropped SSH connection or an exited TUI do
not reach it.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from zerotui.core.errors import RunError
from zerotui.core.hardware.types import Hardware
from zerotui.core.model.spec import spec_for_plan
from zerotui.core.paths import default_runs_dir
from zerotui.core.plan.schema import Plan, load_plan, plan_from_dict
from zerotui.core.run.folder import (RunPaths, new_run_dir, read_status, require_intact, require_not_silent,
                                     run_state, write_status)
from zerotui.core.run.run_files import open_append
from zerotui.core.run.settled import last_finished
from zerotui.core.run.progress import require_progress_kept, require_same_shape
from zerotui.core.safe_read import RUN_FILE_BYTES, describe, read_text
from zerotui.core.run.input_check import check_inputs
from zerotui.core.run import spare, spare_claim
from zerotui.core.run.launcher import uses_launcher, worker_argv
from zerotui.core.run.preflight import preflight
from zerotui.core.run.storage import check_checkpoint_room, check_storage, storage_error
from zerotui.core.run.prepare import launch_files, write_launch_files
from zerotui.core.train.checkpoint import list_checkpoints, newest_complete

# Plan fields that name local files: frozen as absolute paths so that the worker (and a later resume
# from another folder) finds the same files whatever its working directory.
_PATH_FIELDS = ("model", "data", "model_config", "nvme_path", "hostfile")


def _absolute_paths(plan: Plan) -> Plan:
    data = plan.to_dict()
    changed = False
    for key in _PATH_FIELDS:
        value = data.get(key)
        if not value or not isinstance(value, str) or value.startswith("hub:"):
            continue
        p = Path(value).expanduser()
        # model/data may be names ('tiny', 'sample', a hub id): only rewrite what exists here.
        if key in ("model", "data") and not p.exists():
            continue
        if not p.is_absolute() or str(p) != value:
            # Absolute but not resolved: a symlink keeps the name the user gave (and errors name it).
            data[key] = os.path.abspath(p)
            changed = True
    return plan_from_dict(data, "plan") if changed else plan


def _worker_command(plan: Plan, paths: RunPaths, hardware: Hardware, resume: bool) -> tuple[list[str], dict]:
    argv = worker_argv(plan, paths.root, hardware, python=sys.executable, resume=resume)
    return argv, spare.worker_env()  # the environment a spare was started with, when one takes the run


def _open_log(argv: list[str], paths: RunPaths, warnings: list[str]):
    """worker.log, opened for appending with this launch's header line (and its warnings) written and flushed."""
    log = open(paths.log, "ab")  # noqa: SIM115 - handed to the caller's with-block
    try:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
        log.write("".join(f"zerotui: warning: {w}\n" for w in warnings).encode())
        log.flush()
    except BaseException:
        log.close()
        raise
    return log


def _spawn(argv: list[str], env: dict, log) -> int:
    """Start the worker in its own session with stdin from /dev/null and stdout+stderr → ``log``."""
    with open(os.devnull, "rb") as devnull:
        try:
            proc = subprocess.Popen(argv, stdin=devnull, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, close_fds=True)
        except OSError as err:
            raise RunError(f"cannot start the worker {argv[0]}: {err.strerror or err}",
                           "check that the Python environment zerotui runs in is intact") from None
    # A long-lived launcher (the TUI) reaps its children, or each finished run leaves a zombie behind.
    threading.Thread(target=proc.wait, name=f"zerotui-reap-{proc.pid}", daemon=True).start()
    return proc.pid


def _note_pid(paths: RunPaths, pid: int, launched: float) -> None:
    """Record the worker's pid until its own first heartbeat replaces this status."""
    st = read_status(paths)
    if st.get("state") == "starting" and not st.get("pid") and st.get("launched") == launched:
        try:
            write_status(paths, **{**st, "pid": pid, "pids": [pid], "heartbeat": time.time()})
        except OSError:
            pass  # a disk filling now: the worker is started and its first heartbeat writes the status


def _detect() -> Hardware:
    from zerotui.core.hardware.detect import detect  # NVML and psutil: only when nobody detected yet

    return detect(probe_disks=False)


#: Told each warning of a launch that goes ahead anyway (the CLI prints them); each is also written to the
#: run's worker.log, so a launch that passes none (the wizard, a sweep) still leaves it on record.
Warn = Callable[[str], None]


def start_run(plan: Plan, hardware: Optional[Hardware] = None, runs_dir: Optional[Path] = None,
              resume_from: Optional[RunPaths] = None, force: bool = False, warn: Optional[Warn] = None) -> RunPaths:
    """Check, create the run folder, start the detached supervisor + worker; returns at once.

    ``resume_from`` continues that run instead (same as ``resume_run``). ``warn`` is told what the
    checks found that does not stop the launch."""
    if resume_from is not None:
        return resume_run(resume_from, hardware=hardware, force=force, warn=warn)
    plan = _absolute_paths(plan_from_dict(plan.to_dict(), "plan"))
    hardware = hardware if hardware is not None else _detect()
    base = Path(runs_dir or plan.runs_dir or default_runs_dir()).expanduser()
    check_storage(base, "the runs folder", _TRAIN_HINT)  # full or read-only: one line, nothing written
    # A bad data file or model folder: one clear line now, not a failed run after minutes of start-up.
    # Here, not in each caller, so the CLI, the wizard's Launch and its command palette all get it.
    check_inputs(plan, training=True)
    spec = spec_for_plan(plan)  # a ModelError here is the user's to fix: let it through
    budget = preflight(plan, hardware, spec, force=force)
    from zerotui.core.estimate.checkpoint_size import checkpoint_bytes, checkpoint_disk_bytes

    warning = check_checkpoint_room(base, checkpoint_bytes(plan, spec), checkpoint_disk_bytes(plan, spec), force)
    world = plan.world_size(hardware.gpu_count)
    launch_files(plan, world, spec, None)  # a config DeepSpeed would refuse stops here, before any folder exists
    try:
        paths = new_run_dir(base, plan.name)
    except OSError as err:
        _raise_storage(err, base, "the runs folder", _TRAIN_HINT)
    try:
        write_launch_files(paths, launch_files(plan, world, spec, paths.root, hardware, budget))
        return _launch(plan, paths, hardware, resume=False, warnings=_told(warning, warn))
    except BaseException as err:
        # Nothing half-made stays behind: a run folder without a worker would list as 'lost' forever.
        if not paths.events.exists():
            shutil.rmtree(paths.root, ignore_errors=True)
        if isinstance(err, OSError):  # the disk filled up, or turned read-only, since the check
            _raise_storage(err, base, "the runs folder", _TRAIN_HINT)
        raise


_TRAIN_HINT = (
    "free some space or make it writable, or choose another folder with --runs-dir or ZEROTUI_RUNS_DIR; "
    "nothing was written")


def _resume_hint(paths: RunPaths) -> str:
    return f"free some space or make it writable, then `zerotui resume {paths.name}` again; the run folder is as it was"


def _raise_storage(err: OSError, folder: Path, what: str, hint: str) -> None:
    """Raise the StorageError for a full or read-only disk, else ``err`` itself (a bug, not the disk)."""
    problem = storage_error(err, folder, what, hint)
    if problem is None:
        raise err
    raise problem from None


def _told(warning: Optional[str], warn: Optional[Warn]) -> list[str]:
    """Tell ``warn`` the launch's warning, if any (it is going ahead); returns it for the run's log."""
    if warning and warn is not None:
        warn(warning)
    return [warning] if warning else []


def _launch(plan: Plan, paths: RunPaths, hardware: Hardware, resume: bool,
            warnings: Optional[list[str]] = None) -> RunPaths:
    argv, env = _worker_command(plan, paths, hardware, resume)
    launched = time.time()
    started = read_status(paths).get("started") if resume else None  # a run's start survives resumes
    # The log first: a disk that cannot take its header line must not leave status.json saying "starting".
    with _open_log(argv, paths, warnings or []) as log:
        write_status(paths, state="starting", launched=launched, heartbeat=launched, resumed=resume,
                     started=started or launched)
        pid = None
        if spare_claim.claimable(env, uses_launcher(plan, hardware)):
            pid = spare_claim.claim(paths.root, env, resume, launched,  # libraries imported already
                              note=lambda line: (log.write(f"{line}\n".encode()), log.flush()))
        if pid is None:
            pid = _spawn(argv, env, log)
    _note_pid(paths, pid, launched)
    return paths


def last_checkpoint_step(paths: RunPaths) -> Optional[int]:
    """The step of the newest complete checkpoint: the one a resume continues from (None: from 0)."""
    info = newest_complete(paths.checkpoints)
    return info.step if info is not None else None


def resume_run(paths: RunPaths, hardware: Optional[Hardware] = None, force: bool = False,
               restart: bool = False, warn: Optional[Warn] = None) -> RunPaths:
    """Start a worker with ``--resume`` on an existing run folder; refuses a live or completed run, and
    one that saved checkpoints but has none left to continue from unless ``restart`` (from step 0)."""
    if not os.path.lexists(paths.plan):
        raise RunError(f"{paths.root} is not a run folder (no plan.yaml)", "`zerotui runs` lists the runs")
    # A FIFO, a symlink or a tampered status.json in the folder: one line now, not a worker blocked in
    # open() or appending through a link to a file outside the run.
    require_intact(paths, "resume")
    _check_resumable(paths)  # a completed or live run is refused before anything (the lock) is written
    if not restart:
        require_progress_kept(paths)
    check_storage(paths.root, "the run folder", _resume_hint(paths))  # full or read-only: nor on such a disk
    # Two `zerotui resume` at once (two terminals, the TUI and the CLI) must not start two workers on
    # one folder: the check below and the "starting" status written by _launch happen under one lock.
    try:
        lock = os.fdopen(open_append(paths.root / ".launch.lock"), "a")
    except OSError as err:
        _raise_storage_only(err, paths)
        raise RunError(f"cannot lock {paths.root / '.launch.lock'}: {describe(err)}",
                       "check the run folder's permissions; remove .launch.lock if it is not a plain file") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _resume_locked(paths, hardware, force, warn)


def _check_resumable(paths: RunPaths) -> None:
    """RunError when the run is live or completed (nothing to resume)."""
    state = run_state(paths)
    st = read_status(paths)
    if state in ("starting", "running", "paused", "stopping"):
        pid = st.get("pid")
        raise RunError(f"run {paths.name} is still {state}" + (f" (worker pid {pid})" if pid else ""),
                       f"stop it first with `zerotui stop {paths.name}`, or watch it with "
                       f"`zerotui attach {paths.name}`")
    if state == "completed":
        step = st.get("step")
        if not isinstance(step, int):  # status.json lost: the stream's end says where it finished
            step = (last_finished(paths.events) or {}).get("step")
        at = f" at step {step}" if isinstance(step, int) else ""
        raise RunError(f"run {paths.name} completed{at}; there is nothing to resume",
                       "start a new run with `zerotui train` (e.g. with a higher --max-steps)")
    if state == "lost":
        require_not_silent(paths, st)  # a second worker would train on the same folder beside it


def _resume_locked(paths: RunPaths, hardware: Optional[Hardware], force: bool, warn: Optional[Warn]) -> RunPaths:
    _check_resumable(paths)  # again, under the lock: another resume may have started it meanwhile
    plan = load_plan(paths.plan, follow=False)  # the run's own plan.yaml, never a link elsewhere
    require_same_shape(paths, plan)  # edited since its checkpoint: ZeRO stage, method, adapters
    hardware = hardware if hardware is not None else _detect()  # it may resume on another machine
    # The data file may have gone since the run started (docs/reliability.md); resume takes no --data.
    check_inputs(plan, training=True,
                 missing_data_hint=f"put the file back, or point `data:` in {paths.plan} at a copy with the same "
                                   "rows; the run resumes on the data it started with")
    spec = spec_for_plan(plan)
    budget = preflight(plan, hardware, spec, force=force)
    from zerotui.core.estimate.checkpoint_size import checkpoint_bytes, checkpoint_disk_bytes

    held = len([c for c in list_checkpoints(paths.checkpoints) if c.complete])  # their space is taken already
    warning = check_checkpoint_room(paths.root, checkpoint_bytes(plan, spec), checkpoint_disk_bytes(plan, spec),
                                    force, resume=True, held=held)  # else it fails again at the next save
    # The same plan on this machine: ds_config.json changes only if the number of processes did.
    files = launch_files(plan, plan.world_size(hardware.gpu_count), spec, paths.root, hardware, budget)
    del files["plan.yaml"]  # the frozen plan stays exactly as it was written
    try:  # each file is replaced whole or not at all (atomic), so a failure here leaves the folder as it was
        write_launch_files(paths, {n: t for n, t in files.items() if _text(paths.root / n) != t})
        return _launch(plan, paths, hardware, resume=True, warnings=_told(warning, warn))
    except OSError as err:
        _raise_storage(err, paths.root, "the run folder", _resume_hint(paths))
        raise


def _raise_storage_only(err: OSError, paths: RunPaths) -> None:
    problem = storage_error(err, paths.root, "the run folder", _resume_hint(paths))
    if problem is not None:
        raise problem from None


def _text(path: Path) -> Optional[str]:
    try:
        return read_text(path, RUN_FILE_BYTES, follow=False)
    except (OSError, UnicodeDecodeError):
        return None
