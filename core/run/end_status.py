"""The final status.json of a run, written by whoever records its end: the supervisor, or a worker whose
supervisor is gone (``orphan_end``).

Its step, loss and tokens/s come together from the run's newest step report, as ``zerotui runs`` reads
them (``overview.latest_progress``), not from the last heartbeat: after a kill -9 and a resume the
heartbeat's loss and the newest step event may be two workers' (step 10 beside step 5's loss), and a
step event that a resume redid no longer counts (core/events/superseded.py's rule).
"""
from __future__ import annotations

from typing import Any, Optional

from zerotui.core.run.folder import RunPaths, read_status, write_final_status
from zerotui.core.run.overview import latest_progress

Progress = tuple[Optional[int], Optional[float], Optional[float]]


def run_progress(paths: RunPaths) -> Progress:
    """(step, loss, tokens/s) where the run stands: its current worker's newest step report, or the
    ``start_step`` of a resumed worker that reported none yet; status.json's fields without either."""
    return latest_progress(paths, read_status(paths))


def write_end_status(paths: RunPaths, state: str, reason: str, rank: Any, pids: list[int],
                     progress: Optional[Progress] = None, **extra: Any) -> None:
    """``folder.write_final_status`` with step, loss and tokens/s from ``progress`` (read now if None)."""
    step, loss, speed = run_progress(paths) if progress is None else progress
    write_final_status(paths, state, reason, step, rank, pids, loss=loss, tokens_per_s=speed, **extra)
