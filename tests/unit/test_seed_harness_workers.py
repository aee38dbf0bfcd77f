"""The seed harness ends the runs it started (benchmarks/seed_scenarios/run.py ``kill_workers``):
zerotui's supervisor and worker run in a session of their own, so a harness ended by ``timeout`` left
one training on the GPU into the next device command. Real processes, real run folders."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil
from places import REPO

sys.path.insert(0, str(REPO))

from benchmarks.seed_scenarios.run import kill_workers  # noqa: E402

from zerotui.core.run.folder import pid_alive  # noqa: E402

SLEEP = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"


def _started(*argv: str) -> subprocess.Popen:
    """A process in a session of its own, as zerotui's supervisor is, with a child in it (the worker);
    ``argv`` lands in /proc/PID/cmdline as the run folder does in the supervisor's."""
    return subprocess.Popen([sys.executable, "-c", SLEEP, *argv], start_new_session=True)


def _children(pid: int) -> list[int]:
    for _ in range(50):
        kids = [c.pid for c in psutil.Process(pid).children()]
        if kids:
            return kids
        time.sleep(0.1)
    return []


def _run_folder(runs, name: str, status: dict):
    (runs / name).mkdir(parents=True)
    (runs / name / "status.json").write_text(json.dumps(status))
    return runs / name


def _gone(pid: int) -> bool:
    for _ in range(100):
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_live_run_is_killed_with_its_session_and_anything_else_left_alone(tmp_path):
    runs = tmp_path / "runs"
    live, listed = runs / "20261204-1-live", runs / "20261204-2-listed"
    supervisor, worker, stranger = _started(str(live)), _started(str(listed)), _started("zerotui-something-else")
    procs = (supervisor, worker, stranger)
    try:
        child = _children(supervisor.pid)
        assert child, "the supervisor stand-in started no child"
        # before the first heartbeat the status names only the launching process: its session goes too
        _run_folder(runs, live.name, {"state": "starting", "pid": supervisor.pid})
        _run_folder(runs, listed.name, {"state": "running", "pid": worker.pid, "pids": [worker.pid]})
        # a status whose pid is now another program's (pids are reused): not ours to kill
        _run_folder(runs, "20261204-3-reused", {"state": "running", "pid": stranger.pid})
        _run_folder(runs, "20261204-4-ended", {"state": "completed", "pid": 999_999_999})
        (runs / "20261204-5-no-status").mkdir()
        assert sorted(kill_workers(runs, grace_s=0.5)) == sorted([supervisor.pid, worker.pid])
        for p in (supervisor, worker):
            p.wait(timeout=5)
        assert _gone(child[0])
        assert pid_alive(stranger.pid)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_run_that_ends_within_the_grace_is_not_killed(tmp_path):
    runs = tmp_path / "runs"
    folder = runs / "20261204-1-finishing"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)", str(folder)],
                            start_new_session=True)
    try:
        _run_folder(runs, folder.name, {"state": "completed", "pid": proc.pid})
        assert kill_workers(runs, grace_s=10) == []
        assert proc.wait(timeout=5) == 0  # it exited by itself, not by SIGKILL (-9)
    finally:
        proc.kill()
        proc.wait()
