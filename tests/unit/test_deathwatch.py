"""DeathWatch: the wait status of a process that another process reaps, as DeepSpeed's launcher reaps ranks."""
from __future__ import annotations

from places import REPO
import os
import signal
import subprocess
import sys
import time

import pytest

from zerotui.core.run.deathwatch import DeathWatch
from zerotui.core.run.rank_records import describe_wait_status, proc_state

sys.path.insert(0, str(REPO))
from benchmarks.zombie_poll_miss import start_reaping_parent  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfd_open (Linux >= 5.3)")


# A parent that reaps its child within 0.1 s of its exit: ten times sooner than DeepSpeed's launcher,
# and sooner than the supervisor's own 0.2 s poll could be relied on to see the zombie.
def _start(argv: list[str]) -> tuple[subprocess.Popen, int]:
    return start_reaping_parent(argv, poll_s=0.1)


@pytest.mark.parametrize("repeat", range(5))
def test_status_of_a_killed_grandchild_is_caught_before_its_parent_reaps_it(repeat):
    parent, pid = _start(["sleep", "30"])
    watch = DeathWatch()
    try:
        watch.watch(pid)
        # The parent polls at 0.1 s, 0.2 s, ... after printing the pid: kill half-way between two polls,
        # as a kill at a random moment would be, so that the parent reaps ~50 ms after the exit.
        time.sleep(0.25)
        os.kill(pid, signal.SIGKILL)
        assert parent.stdout.readline().strip() == "-9"  # the parent reaped it ...
        assert proc_state(pid) == ("gone", None)  # ... so /proc no longer tells
        assert describe_wait_status(watch.status(pid, wait_s=2.0)) == "killed by SIGKILL"
    finally:
        watch.close()
        parent.wait(timeout=10)


def test_exit_code_is_caught_too():
    parent, pid = _start([sys.executable, "-c", "import time, sys; time.sleep(0.5); sys.exit(3)"])
    watch = DeathWatch()
    try:
        watch.watch(pid)
        assert parent.stdout.readline().strip() == "3"
        assert describe_wait_status(watch.status(pid, wait_s=2.0)) == "exited with code 3"
    finally:
        watch.close()
        parent.wait(timeout=10)


def test_a_process_still_running_has_no_status_and_a_gone_one_is_not_waited_for():
    parent, pid = _start(["sleep", "30"])
    watch = DeathWatch()
    try:
        watch.watch(pid)
        t0 = time.monotonic()
        assert watch.status(pid, wait_s=0.3) is None  # alive: waits at most wait_s, then None
        assert 0.25 < time.monotonic() - t0 < 2.0
        assert watch.status(12345678) is None  # never watched: no wait, no status
    finally:
        os.kill(pid, signal.SIGKILL)
        watch.close()
        parent.wait(timeout=10)
