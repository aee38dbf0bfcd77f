"""The seed harness ends the workers it started (benchmarks/seed_scenarios/run.py ``kill_workers``):
zerotui's worker runs in a session of its own, so a harness ended by ``timeout`` left one training on
the GPU into the next device command. Real processes, real run folders."""
from __future__ import annotations

import json
import subprocess
import sys
import time

from places import REPO

sys.path.insert(0, str(REPO))

from benchmarks.seed_scenarios.run import kill_workers  # noqa: E402

from zerotui.core.run.folder import pid_alive  # noqa: E402


def _sleeper(tag: str) -> subprocess.Popen:
    # the tag lands in /proc/PID/cmdline as an argument, as "zerotui" does in a worker's
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", tag], start_new_session=True)


def _run_folder(runs, name: str, status: dict) -> None:
    (runs / name).mkdir(parents=True)
    (runs / name / "status.json").write_text(json.dumps(status))


def _gone(proc: subprocess.Popen) -> bool:
    for _ in range(100):
        if proc.poll() is not None:
            return True
        time.sleep(0.05)
    return False


def test_a_live_worker_is_killed_and_anything_else_left_alone(tmp_path):
    runs = tmp_path / "runs"
    worker, stranger = _sleeper("zerotui-worker"), _sleeper("someone-else")
    try:
        _run_folder(runs, "20261204-1-live", {"state": "running", "pid": worker.pid, "pids": [worker.pid]})
        # a status whose pid is now another program's (pids are reused): not ours to kill
        _run_folder(runs, "20261204-2-reused", {"state": "running", "pid": stranger.pid})
        _run_folder(runs, "20261204-3-ended", {"state": "completed", "pid": 999_999_999})
        (runs / "20261204-4-no-status").mkdir()
        assert kill_workers(runs) == [worker.pid]
        assert _gone(worker)
        assert pid_alive(stranger.pid)
    finally:
        for p in (worker, stranger):
            p.kill()
            p.wait()
