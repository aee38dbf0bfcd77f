"""The wait status of processes we did not start, caught the moment they exit.

The ranks of a multi-process run are children of DeepSpeed's launcher, so only the launcher can wait()
for them; the supervisor learns how a rank ended from ``/proc/<pid>/stat`` while the rank is a zombie
(``rank_records.proc_state``). The launcher reaps within a second (it polls every 1 s,
deepspeed/launcher/launch.py), so a supervisor that only looked every 0.2 s missed the zombie 5 times in
80 kills (benchmarks/zombie_poll_miss.py) and had to write "killed by a signal, or crashed" for a plain
``kill -9`` (it failed a CI run). The watch here missed it 0 times in the same 80.

Here a thread holds a pidfd (``pidfd_open``, Linux >= 5.3) per watched process and sleeps in poll(); the
kernel wakes it when the process exits, before its parent can have reaped it unless the parent happened
to be waiting at that very moment, and the status is read at once. Where pidfds are unavailable,
``status`` returns None and the caller keeps its own polling.
"""
from __future__ import annotations

import os
import select
import threading
import time
from typing import Optional

from zerotui.core.run.rank_records import proc_state

#: How often the thread picks up newly watched pids (the poll's timeout).
PICKUP_S = 0.05


class DeathWatch:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: list[int] = []
        self._status: dict[int, Optional[int]] = {}  # pid -> wait status (None: exited, status unread)
        self._watched: set[int] = set()
        self._stopped = False
        self.available = hasattr(os, "pidfd_open")
        self._thread: Optional[threading.Thread] = None

    def watch(self, pid: int) -> None:
        if not self.available:
            return
        with self._cond:
            if pid in self._watched:
                return
            self._watched.add(pid)
            self._pending.append(pid)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="zerotui-deathwatch", daemon=True)
                self._thread.start()

    def status(self, pid: int, wait_s: float = 0.0) -> Optional[int]:
        """The wait status caught for ``pid``, waiting up to ``wait_s`` for the thread to catch it."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            while pid in self._watched and pid not in self._status and not self._stopped:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return self._status.get(pid)

    def close(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def _record(self, pid: int, status: Optional[int]) -> None:
        with self._cond:
            self._status[pid] = status
            self._cond.notify_all()

    def _loop(self) -> None:
        poller = select.poll()
        fds: dict[int, int] = {}  # fd -> pid
        try:
            while True:
                with self._cond:
                    if self._stopped:
                        return
                    pending, self._pending = self._pending, []
                for pid in pending:
                    try:
                        fd = os.pidfd_open(pid)
                    except ProcessLookupError:  # already gone (and reaped): nothing to read any more
                        self._record(pid, proc_state(pid)[1])
                        continue
                    except OSError:  # no pidfd support in this kernel: the caller's polling stays
                        self.available = False
                        self._record(pid, None)
                        continue
                    fds[fd] = pid
                    poller.register(fd, select.POLLIN)
                for fd, _ in poller.poll(PICKUP_S * 1000):
                    pid = fds.pop(fd)
                    # Read before anything else: the parent may reap it at its next poll.
                    self._record(pid, proc_state(pid)[1])
                    poller.unregister(fd)
                    os.close(fd)
        finally:
            for fd in fds:
                os.close(fd)
