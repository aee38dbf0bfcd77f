"""How often a 0.2 s /proc poll misses a killed process's wait status, and how often the pidfd watch does.

The parent here reaps like DeepSpeed's launcher (poll every 1 s); the victim is killed at a random
moment. Run: ``.venv/bin/python benchmarks/zombie_poll_miss.py [TRIALS]``.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time

from zerotui.core.run.deathwatch import DeathWatch
from zerotui.core.run.rank_records import proc_state

# A parent that starts ARGV, prints its pid, reaps it by polling every POLL_S (as DeepSpeed's launcher
# does, every 1 s) and prints its return code. tests/unit/test_deathwatch.py uses it too.
PARENT = """
import subprocess, sys, time
poll_s, argv = float(sys.argv[1]), sys.argv[2:]
child = subprocess.Popen(argv)
print(child.pid, flush=True)
while child.poll() is None:
    time.sleep(poll_s)
print(child.returncode, flush=True)
"""


def start_reaping_parent(argv: list[str], poll_s: float) -> tuple[subprocess.Popen, int]:
    """(the parent, the pid of its child running ``argv``); the parent's stdout then gives the return code."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(poll_s), *argv], stdout=subprocess.PIPE, text=True)
    return parent, int(parent.stdout.readline())


def trial() -> tuple[bool, bool]:
    parent, pid = start_reaping_parent(["sleep", "60"], poll_s=1.0)
    watch = DeathWatch()
    watch.watch(pid)
    polled: list = []

    def poll_02() -> None:  # what the supervisor did before: look every 0.2 s
        while True:
            state, status = proc_state(pid)
            if state != "alive":
                polled.append(status)
                return
            time.sleep(0.2)

    t = threading.Thread(target=poll_02)
    time.sleep(random.uniform(0.0, 0.2))
    t.start()
    time.sleep(random.uniform(0.5, 1.5))
    os.kill(pid, signal.SIGKILL)
    parent.stdout.readline()
    t.join()
    caught = watch.status(pid, wait_s=2.0) is not None
    watch.close()
    parent.wait()
    return polled[0] is not None, caught


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    results = [trial() for _ in range(n)]
    poll_miss = sum(not p for p, _ in results)
    watch_miss = sum(not w for _, w in results)
    print(f"{n} kills: 0.2 s poll missed the status {poll_miss} times ({100 * poll_miss / n:.0f}%), "
          f"pidfd watch missed it {watch_miss} times")
