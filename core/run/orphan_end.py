"""The end of a run whose supervisor is gone, recorded by one of its workers.

The supervisor writes ``run_finished`` and the final status once every process of the run has exited
(core/run/supervisor.py). Killed itself (kill -9, an OOM kill of the wrong process), it writes nothing:
the worker trains on to the end, writes its checkpoint and ``final/``, and the run would then read as
"lost", with a resume offered for a run that had finished. So a worker that finds its supervisor gone
when it ends records the end itself.

Rank 0 records it: it is the writer of events.jsonl, and it ends last or nearly so in a healthy run.
With several ranks, rank 0 may be the one that is gone (the OOM killer, kill -9; DeepSpeed's launcher
then ends the others): another rank that ends with neither the supervisor nor rank 0 left records it
instead, so the stream still has one writer at a time. A lock on the ranks folder, and the end already
in the stream, keep two ranks ending together from writing two ends. The end is decided from every
rank's record as the supervisor would (``verdict.decide``), so it names the rank that died first, not
the lost peer the recording rank saw.

Left open: a rank 0 that is still alive (hung) when the last other rank exits, then killed by the
launcher, records nothing; the run reads as "lost" and `zerotui resume` continues it.
"""
from __future__ import annotations

import fcntl
import os
import socket
import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from zerotui.core.events.stream import EventWriter
from zerotui.core.run.end_status import write_end_status
from zerotui.core.run.folder import RunPaths, pid_alive, read_status
from zerotui.core.run.rank_records import RANKS_DIR, read_records
from zerotui.core.run.settled import last_finished
from zerotui.core.run.verdict import decide

ORPHAN_NOTE = "its supervisor had gone, so the worker recorded the end"


def record_orphan_end(paths: RunPaths, supervisor: Optional[int], state: str, reason: str,
                      step: Optional[int], world_size: Any = None, rank: int = 0) -> bool:
    """Write ``run_finished`` and the final status when ``supervisor`` is no longer running and this
    ``rank`` is the one to say it (see the module docstring); True if it did."""
    if supervisor is None or pid_alive(supervisor):
        return False
    with _one_end_at_a_time(paths):
        records = read_records(paths.root)
        if _already_recorded(paths, records) or (rank != 0 and not _rank0_gone(records)):
            return False
        world = world_size or max((r.get("world_size") or 0 for r in records.values()), default=0) or None
        culprit = None
        if (world or 1) > 1:
            state, reason, culprit = _decide(records, rank, state, reason)
        reason = f"{reason} ({ORPHAN_NOTE})"
        with EventWriter(paths.events) as writer:
            writer.emit("run_finished", state=state, reason=reason, step=step, rank=culprit, world_size=world,
                        pids=[os.getpid()])
        write_end_status(paths, state, reason, culprit, [os.getpid()])
    return True


@contextmanager
def _one_end_at_a_time(paths: RunPaths) -> Iterator[None]:
    # The ranks folder, not a new file: every rank has written its record there, and the run folder's
    # contents stay what docs/ lists.
    try:
        fd = os.open(paths.root / RANKS_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # no record was written (an in-process test's worker): rank 0 alone gets here
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _already_recorded(paths: RunPaths, records: dict[int, dict[str, Any]]) -> bool:
    """Whether this attempt's end is in the stream: a ``run_finished`` after its last ``run_started`` and
    not older than the attempt (one that failed before its run_started still has the last attempt's end
    at the stream's tail)."""
    finished = last_finished(paths.events)
    if finished is None:
        return False
    starts = [r["started"] for r in records.values() if isinstance(r.get("started"), (int, float))]
    launched = read_status(paths).get("launched")
    starts = starts or ([launched] if isinstance(launched, (int, float)) else [])
    t = finished.get("t")
    return bool(starts) and isinstance(t, (int, float)) and t >= min(starts)


def _rank0_gone(records: dict[int, dict[str, Any]]) -> bool:
    """Rank 0 started here and is no longer running. Without its record it may still be starting, and
    would then write events after an end written here; on another node its pid says nothing here."""
    rec = records.get(0, {})
    return _here(rec) and rec.get("pid") is not None and not pid_alive(rec["pid"])


def _here(rec: dict[str, Any]) -> bool:
    return rec.get("host") in (None, socket.gethostname())


def _decide(records: dict[int, dict[str, Any]], rank: int, state: str,
            reason: str) -> tuple[str, str, Optional[int]]:
    """``verdict.decide`` from the ranks' records, with this rank's own end where its record lacks it.
    A rank whose process is gone without an end in its record died silently; when, this process cannot
    tell (no wait status either), so it counts as now."""
    now = time.time()
    own = records.get(rank, {"rank": rank})
    if not own.get("state"):
        records = {**records, rank: {**own, "rank": rank, "state": state, "reason": reason, "cause": "",
                                     "ended": now}}
    deaths = {r: {"pid": rec.get("pid"), "at": now, "status": None} for r, rec in records.items()
              if not rec.get("state") and _here(rec) and rec.get("pid") is not None and not pid_alive(rec["pid"])}
    return decide(records, deaths, None)
