"""The locked-memory limit (RLIMIT_MEMLOCK, ``ulimit -l``) and NVMe offload.

DeepSpeed's async I/O swaps through host buffers it locks with mlock() (csrc/pin_memory/page_alloc.cpp):
the optimizer's four fp32 buffers of its largest sub-group, and the weights' buffers when they are on
NVMe (core/estimate/host.py ``locked_bytes`` counts them). A process may lock only RLIMIT_MEMLOCK bytes
unless it holds CAP_IPC_LOCK, which root usually does. Ordinary accounts commonly get 8 MiB (systemd's
default) or 64 KiB, and an NVMe plan locks gigabytes. When mlock() fails, DeepSpeed 0.19.8 prints "mlock
failed to allocate N bytes" and fails an assertion, so the worker dies of SIGABRT inside
deepspeed.initialize (seen on the CPU, as root without CAP_IPC_LOCK under ``ulimit -l 8192``).

zerotui therefore: raises the worker's soft limit to its hard limit, which needs no privilege
(``raise_soft_limit``); refuses at launch a plan whose buffers exceed the hard limit (``limit_problem``);
and names the limit in the end of a run that died of it (``mlock_failure``).
"""
from __future__ import annotations

import re
import resource
from pathlib import Path
from typing import Optional

from zerotui.core.sizes import format_bytes

#: Linux capability number of CAP_IPC_LOCK (linux/capability.h): it lifts RLIMIT_MEMLOCK
CAP_IPC_LOCK = 14
#: what DeepSpeed's page_alloc.cpp writes to stderr (worker.log) before its assertion aborts the process
MLOCK_FAILED = re.compile(rb"mlock failed to allocate (\d+) bytes")

HINT = ("raise the locked-memory limit: add '<user> - memlock unlimited' to /etc/security/limits.conf and log "
        "in again (LimitMEMLOCK=infinity for a systemd service, --ulimit memlock=-1 for docker run), or "
        "offload to host RAM instead (--offload-optimizer cpu, --offload-params cpu)")


def holds_ipc_lock(status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process may lock memory beyond its limit (CAP_IPC_LOCK in its effective set)."""
    try:
        for line in status.read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_IPC_LOCK & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def allowance() -> Optional[int]:
    """Bytes a process started from here may lock once it raises its soft limit (the hard limit); None
    where nothing limits it (an unlimited hard limit, or CAP_IPC_LOCK)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if hard == resource.RLIM_INFINITY or holds_ipc_lock():
        return None
    return int(hard)


def raise_soft_limit() -> Optional[str]:
    """Lift this process's soft RLIMIT_MEMLOCK to its hard limit (no privilege needed); a line for the
    log when it changed, else None."""
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft == hard or soft == resource.RLIM_INFINITY:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (hard, hard))
    except (ValueError, OSError) as err:
        return f"locked-memory limit left at {_limit(soft)}: raising it to {_limit(hard)} failed ({err})"
    return f"locked-memory limit raised from {_limit(soft)} to {_limit(hard)} for NVMe offload's swap buffers"


def limit_problem(locked: int) -> Optional[str]:
    """Why a plan that locks ``locked`` bytes per process cannot start here; None where it can."""
    room = allowance()
    if locked <= 0 or room is None or locked <= room:
        return None
    return (f"NVMe offload locks {format_bytes(locked)} of host RAM in each process for DeepSpeed's swap "
            f"buffers, but this account may lock only {format_bytes(room)} (ulimit -l): DeepSpeed's mlock() "
            "would fail and the run would abort as DeepSpeed starts")


def mlock_failure(log: Path, locked: Optional[int] = None) -> Optional[str]:
    """The reason for a run whose worker died because mlock() failed (read from the end of worker.log);
    None where the log does not say so. ``locked``: the plan's locked bytes per process (estimate.json)."""
    from zerotui.core.deepspeed.nvme_swap import log_tail

    found = MLOCK_FAILED.search(log_tail(log))
    if found is None:
        return None
    _soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    plan = f"; the plan locks about {format_bytes(locked)} in each process" if locked else ""
    return (f"DeepSpeed could not lock a {format_bytes(int(found.group(1)))} swap buffer for NVMe offload "
            f"(mlock failed: this account may lock at most {_limit(hard)}, ulimit -l{plan}) and aborted: {HINT}")


def _limit(value: int) -> str:
    return "unlimited" if value == resource.RLIM_INFINITY else format_bytes(value)
