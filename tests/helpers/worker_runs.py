"""Runs of the real worker around a small real training loop (``worker_helpers.py``), started as
``zerotui train`` starts a run: the supervisor with the worker as its direct child, in a session of their
own, reading and writing only the run folder."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from places import WORKER_HELPER
from run_events import events

from zerotui.core.events.stream import validate
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths, new_run_dir, read_status, write_status

SUPERVISOR = "zerotui.core.run.supervisor"


def make_run(tmp_path: Path, **plan_fields) -> RunPaths:
    fields = {"name": "w", "max_steps": 20, "log_interval": 1, "save_interval": 0, **plan_fields}
    paths = new_run_dir(tmp_path / "runs", fields["name"])
    paths.plan.write_text(Plan(**fields).to_yaml())
    return paths


def supervised(paths: RunPaths, *worker_args: str) -> list[str]:
    """argv of the supervisor around the helper worker (``--direct``: the worker is rank 0 itself)."""
    return [sys.executable, "-m", SUPERVISOR, str(paths.root), "--direct", "--",
            sys.executable, str(WORKER_HELPER), str(paths.root), *worker_args]


def start_worker(paths: RunPaths, *extra: str, step_s: float = 0.0, **env: str) -> subprocess.Popen:
    """The supervised helper worker, detached; ``extra`` are the worker's own options (``--resume``)."""
    full_env = {**os.environ, "ZEROTUI_TEST_STEP_S": str(step_s), "ZEROTUI_TELEMETRY_S": "0.5",
                "PYTHONUNBUFFERED": "1", **env}
    if extra:  # what resume_run does before it starts a worker: a fresh launch time in status.json
        write_status(paths, **{**read_status(paths), "state": "starting", "launched": time.time()})
    with open(paths.log, "ab") as log:
        return subprocess.Popen(supervised(paths, *extra), env=full_env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def worker_pid(paths: RunPaths, timeout: float = 30.0) -> int:
    """The worker's own pid (the supervisor's child), once the supervisor has started it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in read_status(paths).get("pids") or [] if p != read_status(paths).get("pid")]
        if pids:
            return int(pids[0])
        time.sleep(0.05)
    raise AssertionError(f"no worker pid in {paths.status}")


def kill_run(proc: subprocess.Popen) -> None:
    """SIGKILL to every process of the run at once (a machine that lost power, an OOM-killed session):
    nobody is left to write the end, and the run reads as lost."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def step_reached(paths: RunPaths, n: int):
    return lambda: any(e.get("step", 0) >= n for e in events(paths, "step"))


def finish(proc: subprocess.Popen, paths: RunPaths, timeout: float = 60.0) -> dict:
    """Wait for the run to end; check it ended as every run must: one run_finished, last, and a final
    status.json that agrees with it."""
    rc = proc.wait(timeout)
    evs = events(paths)
    for e in evs:
        assert validate(e) == [], e
    finished = [e for e in evs if e["type"] == "run_finished"]
    assert len(finished) == 1, f"expected exactly one run_finished, got {finished}; log:\n{paths.log.read_text()}"
    assert evs[-1]["type"] == "run_finished"
    status = read_status(paths)
    assert status["state"] == finished[0]["state"]
    return {"rc": rc, "finished": finished[0], "status": status}
