"""After a run: does NVML still show GPU memory held by any of the run's processes?

A graceful stop must free every GPU of the run. Process exit is what frees CUDA memory, so the
check is: NVML's list of compute processes on each GPU (``nvmlDeviceGetComputeRunningProcesses``)
contains none of the run's pids. On a machine without NVML (the CPU CI machine) the check is skipped and
the result says so; it never raises.

Caveat: inside a container with its own PID namespace NVML reports host pids, which match none of ours;
the check then reports the GPU memory in use by any process on the run's GPUs, so a user can still see
whether it went down.
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Optional

from zerotui.core.hardware.nvml import NvmlSession

#: The driver releases a context's memory as the process is torn down; allow it this long to show.
SETTLE_S = 10.0


def gpu_memory_held(pids: Iterable[int], session: Optional[NvmlSession] = None) -> dict[str, Any]:
    """``{"checked": bool, "held": [{"gpu", "pid", "bytes"}], "note": str}`` for the given pids."""
    wanted = {int(p) for p in pids if p}
    own = session is None
    nv = NvmlSession() if own else session
    try:
        if not nv.ok:
            return {"checked": False, "held": [], "note": f"GPU memory check skipped: {nv.error}"}
        count, why = nv.call("nvmlDeviceGetCount")
        if count is None:
            return {"checked": False, "held": [], "note": f"GPU memory check skipped: {why}"}
        held, unreadable = [], []
        for i in range(int(count)):
            handle, why = nv.call("nvmlDeviceGetHandleByIndex", i)
            procs, why2 = nv.call("nvmlDeviceGetComputeRunningProcesses", handle) if handle is not None \
                else (None, why)
            if procs is None:
                unreadable.append(f"GPU {i}: {why2}")
                continue
            for p in procs:
                pid = int(getattr(p, "pid", 0) or 0)
                if pid in wanted:
                    used = getattr(p, "usedGpuMemory", None)
                    held.append({"gpu": i, "pid": pid, "bytes": int(used) if isinstance(used, int) else None})
        if held:
            where = ", ".join(f"pid {h['pid']} on GPU {h['gpu']}" for h in held)
            note = f"NVML shows GPU memory still held by the run: {where}"
        else:
            note = f"NVML shows no GPU memory held by the run's {len(wanted)} process(es) on {int(count)} GPU(s)"
        if unreadable:
            note += "; could not read " + "; ".join(unreadable)
        return {"checked": not unreadable, "held": held, "note": note}
    finally:
        if own:
            nv.close()


def wait_gpu_release(pids: Iterable[int], timeout: float = SETTLE_S, poll_s: float = 0.5) -> dict[str, Any]:
    """``gpu_memory_held``, retried for up to ``timeout`` seconds while memory is still shown held."""
    pids = list(pids)
    deadline = time.monotonic() + timeout
    session = NvmlSession()
    try:
        while True:
            result = gpu_memory_held(pids, session)
            if not result["held"] or time.monotonic() >= deadline:
                return result
            time.sleep(poll_s)
    finally:
        session.close()
