"""Starting a run: preflight, the run folder, and the detached worker.

``start_run`` writes everything the worker needs (plan.yaml, ds_config.json, hardware.json) and starts
``python -m zerotui.core.worker RUN_DIR`` (or the DeepSpeed launcher for several processes) in its own
session with its output appended to worker.log, then returns at once. The worker outlives the process
that started it: a closed terminal, a dropped SSH connection or an exited TUI do not reach it.

Preflight refuses, before anything is written, what would fail minutes later on the GPU box: a plan that
does not validate, a runs folder that cannot be written, an NVMe folder that cannot be written, and a
plan the memory estimator says does not fit (unless ``force``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from .atomic import atomic_write_json, atomic_write_text
from .errors import HardwareError, RunError
from .hardware_types import Hardware
from .plan import Plan, plan_from_dict
from .runs import RunPaths, default_runs_dir, new_run_dir, read_status, run_state, write_status

GIB = 1024 ** 3

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
            data[key] = str(p.resolve())
            changed = True
    return plan_from_dict(data, "plan") if changed else plan


def _check_writable(folder: Path, what: str, hint: str) -> None:
    """Create ``folder`` if needed and write (then remove) a small file in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".zerotui-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise HardwareError(f"{what} {folder} is not writable ({err.strerror or err})", hint) from None


def _spec(plan: Plan) -> Any:
    """The model's shape for bucket sizes and the estimate; None when the model module is not there."""
    try:
        from .models import spec_for_plan
    except ImportError:
        return None
    return spec_for_plan(plan)  # a ModelError here is the user's to fix: let it through


def preflight(plan: Plan, hardware: Hardware, spec: Any = None, force: bool = False) -> Any:
    """Refuse a plan that cannot run here; returns the memory Budget (None without an estimator).

    Data and model inputs are checked by ``start_run`` (core/inputcheck.py), not here: a resumed run
    may go on from its tokenised cache."""
    from .launcher import gpu_choice_problem

    problem = gpu_choice_problem(plan, hardware)
    if problem is not None:
        raise HardwareError(problem[1], problem[2])
    if plan.uses_nvme():
        assert plan.nvme_path is not None  # the Plan's own validator guarantees it
        _check_writable(Path(plan.nvme_path).expanduser(), "the NVMe offload folder",
                        "give --nvme-path a folder on a local NVMe disk that you can write to")
    try:
        from .memory import estimate
    except ImportError:
        return None
    budget = estimate(plan, hardware, spec) if spec is not None else estimate(plan, hardware)
    if budget.fits or force:
        return budget
    raise HardwareError(f"the plan does not fit this machine: {budget_summary(budget)}",
                        "`zerotui fit` lists plans that fit; --force launches anyway")


def budget_summary(budget: Any) -> str:
    """'GPU 30.2 of 23.6 GiB per GPU, host RAM 80.0 of 62.7 GiB' — only the parts that do not fit first."""
    parts = []
    for label, need, cap in (("GPU", "gpu_bytes", "gpu_capacity"), ("host RAM", "cpu_bytes", "cpu_capacity"),
                             ("NVMe", "nvme_bytes", "nvme_capacity")):
        n, c = getattr(budget, need, 0) or 0, getattr(budget, cap, 0) or 0
        if not n and not c:
            continue
        per = " per GPU" if label == "GPU" else ""
        flag = " (too much)" if c and n > c else ""
        parts.append((0 if flag else 1, f"{label} {n / GIB:.1f} of {c / GIB:.1f} GiB{per}{flag}"))
    return ", ".join(text for _, text in sorted(parts, key=lambda p: p[0])) or "no capacity known"


def _ds_config(plan: Plan, world_size: int, spec: Any, run_dir: Optional[Path] = None) -> dict:
    from .dsconfig import build_ds_config

    return build_ds_config(plan, world_size, spec, run_dir=run_dir)


def _worker_command(plan: Plan, paths: RunPaths, hardware: Hardware, resume: bool) -> tuple[list[str], dict]:
    from .launcher import launcher_env, worker_argv

    # Several processes: zerotui's supervisor around DeepSpeed's launcher (core/supervisor.py).
    argv = worker_argv(plan, paths.root, hardware, python=sys.executable, resume=resume)
    env = dict(launcher_env(plan, hardware))
    env["PYTHONUNBUFFERED"] = "1"  # worker.log shows output as it happens, not in 8 KiB blocks
    return argv, env


def _spawn(argv: list[str], env: dict, paths: RunPaths) -> int:
    """Start the worker in its own session with stdin from /dev/null and stdout+stderr → worker.log."""
    with open(paths.log, "ab") as log, open(os.devnull, "rb") as devnull:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
        log.flush()
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
        write_status(paths, **{**st, "pid": pid, "pids": [pid], "heartbeat": time.time()})


def start_run(plan: Plan, hardware: Optional[Hardware] = None, runs_dir: Optional[Path] = None,
              resume_from: Optional[RunPaths] = None, force: bool = False) -> RunPaths:
    """Preflight, create the run folder, start the detached worker; returns at once.

    ``resume_from`` continues that run instead (same as ``resume_run``)."""
    if resume_from is not None:
        return resume_run(resume_from, hardware=hardware, force=force)
    plan = _absolute_paths(plan_from_dict(plan.to_dict(), "plan"))
    if hardware is None:
        from .hardware import detect

        hardware = detect(probe_disks=False)
    base = Path(runs_dir or plan.runs_dir or default_runs_dir()).expanduser()
    _check_writable(base, "the runs folder", "choose another with --runs-dir or ZEROTUI_RUNS_DIR")
    from .inputcheck import check_inputs

    # A bad data file or model folder: one clear line now, not a failed run after minutes of start-up.
    # Here, not in each caller, so the CLI, the wizard's Launch and its command palette all get it.
    check_inputs(plan, training=True)
    spec = _spec(plan)
    preflight(plan, hardware, spec, force=force)
    world = plan.world_size(hardware.gpu_count)
    _ds_config(plan, world, spec)  # a config DeepSpeed would refuse stops here, before any folder exists
    paths = new_run_dir(base, plan.name)
    try:
        atomic_write_text(paths.plan, plan.to_yaml())
        atomic_write_json(paths.ds_config, _ds_config(plan, world, spec, paths.root))
        atomic_write_json(paths.hardware, hardware.to_dict())
        return _launch(plan, paths, hardware, resume=False)
    except BaseException:
        # Nothing half-made stays behind: a run folder without a worker would list as 'lost' forever.
        if not paths.events.exists():
            import shutil

            shutil.rmtree(paths.root, ignore_errors=True)
        raise


def _launch(plan: Plan, paths: RunPaths, hardware: Hardware, resume: bool) -> RunPaths:
    argv, env = _worker_command(plan, paths, hardware, resume)
    launched = time.time()
    started = read_status(paths).get("started") if resume else None  # a run's start survives resumes
    write_status(paths, state="starting", launched=launched, heartbeat=launched, resumed=resume,
                 started=started or launched)
    pid = _spawn(argv, env, paths)
    _note_pid(paths, pid, launched)
    return paths


def last_checkpoint_step(paths: RunPaths) -> Optional[int]:
    """The step of the newest complete checkpoint: the one a resume continues from (None: from 0)."""
    from .checkpoint import newest_complete

    info = newest_complete(paths.checkpoints)
    return info.step if info is not None else None


def resume_run(paths: RunPaths, hardware: Optional[Hardware] = None, force: bool = False) -> RunPaths:
    """Start a worker with ``--resume`` on an existing run folder; refuses a live or completed run."""
    if not paths.plan.exists():
        raise RunError(f"{paths.root} is not a run folder (no plan.yaml)", "`zerotui runs` lists the runs")
    import fcntl

    # Two `zerotui resume` at once (two terminals, the TUI and the CLI) must not start two workers on
    # one folder: the check below and the "starting" status written by _launch happen under one lock.
    with open(paths.root / ".launch.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _resume_locked(paths, hardware, force)


def _resume_locked(paths: RunPaths, hardware: Optional[Hardware], force: bool) -> RunPaths:
    state = run_state(paths)
    st = read_status(paths)
    if state in ("starting", "running", "paused", "stopping"):
        pid = st.get("pid")
        raise RunError(f"run {paths.name} is still {state}" + (f" (worker pid {pid})" if pid else ""),
                       f"stop it first with `zerotui stop {paths.name}`, or watch it with "
                       f"`zerotui attach {paths.name}`")
    if state == "completed":
        raise RunError(f"run {paths.name} completed at step {st.get('step')}; there is nothing to resume",
                       "start a new run with `zerotui train` (e.g. with a higher --max-steps)")
    from .plan import load_plan

    plan = load_plan(paths.plan)
    if hardware is None:
        from .hardware import detect

        hardware = detect(probe_disks=False)  # the run may resume on another machine than it started on
    from .inputcheck import check_inputs

    # The data file may have gone since the run started (docs/reliability.md); resume takes no --data.
    check_inputs(plan, training=True,
                 missing_data_hint=f"put the file back, or point `data:` in {paths.plan} at a copy with the same "
                                   "rows; the run resumes on the data it started with")
    preflight(plan, hardware, _spec(plan), force=force)
    atomic_write_json(paths.hardware, hardware.to_dict())
    return _launch(plan, paths, hardware, resume=True)

