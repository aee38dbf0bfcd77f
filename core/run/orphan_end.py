"""The end of a run whose supervisor is gone, recorded by its rank-0 worker.

The supervisor writes ``run_finished`` and the final status once every process of the run has exited
(core/run/supervisor.py). Killed itself (kill -9, an OOM kill of the wrong process), it writes nothing:
the worker trains on to the end, writes its checkpoint and ``final/``, and the run would then read as
"lost", with a resume offered for a run that had finished. So a rank-0 worker that finds its supervisor
gone when it ends records the end itself, from what it knows: its own state and reason.
"""
from __future__ import annotations

import os
from typing import Any, Optional

from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import RunPaths, pid_alive, write_final_status

ORPHAN_NOTE = "its supervisor had gone, so the worker recorded the end"


def record_orphan_end(paths: RunPaths, supervisor: Optional[int], state: str, reason: str,
                      step: Optional[int], world_size: Any = None) -> bool:
    """Write ``run_finished`` and the final status when ``supervisor`` is no longer running; True if it did."""
    if supervisor is None or pid_alive(supervisor):
        return False
    reason = f"{reason} ({ORPHAN_NOTE})"
    with EventWriter(paths.events) as writer:
        writer.emit("run_finished", state=state, reason=reason, step=step, rank=None, world_size=world_size,
                    pids=[os.getpid()])
    write_final_status(paths, state, reason, step, None, [os.getpid()])
    return True
