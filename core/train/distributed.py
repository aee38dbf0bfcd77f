"""torch.distributed for the training run: the process group, its timeouts, and waits for rank 0.

Several processes are started by DeepSpeed's launcher, which sets RANK / WORLD_SIZE / MASTER_*; one
process (the CPU, or one GPU) is started without it, and ``single_process_env`` gives torch.distributed
what it expects. The collective timeout comes from DEEPSPEED_TIMEOUT, which the launcher's environment
sets (``zerotui.core.run.launcher.launcher_env``) and a user may override.
"""
from __future__ import annotations

import os
import socket
import sys
from datetime import timedelta
from typing import Any, Callable, Mapping, Optional

from zerotui.core.deepspeed.opbuild import clear_stale_build_locks, put_interpreter_bin_on_path

#: Minutes a collective may wait for the other ranks before the process group gives up
#: (deepspeed/constants.py reads DEEPSPEED_TIMEOUT; ``init_distributed`` also passes it on). A hung or
#: dead peer then ends the run in about this long instead of hanging it. 10 minutes is DeepSpeed's and
#: torch's NCCL default, and what zerotui's own collectives need: every rank does the same work between
#: two collectives of a step (the wait is the ranks' imbalance, seconds), and the waits that are long by
#: design — rank 0 alone tokenising a large dataset, or fsyncing and pruning a checkpoint while the others
#: wait — go through a separate gloo group with RANK0_WORK_TIMEOUT. The stall watchdog
#: (plan.stall_minutes, also 10) alerts at about the same time. A user's own DEEPSPEED_TIMEOUT wins.
DEFAULT_TIMEOUT_MINUTES = "10"
#: The barriers where the other ranks wait for work that rank 0 does alone (see above): hours of
#: tokenising are possible on a large corpus; a rank 0 that dies there ends the run at once anyway (the
#: launcher sees its exit), so this only bounds a rank 0 that hangs.
RANK0_WORK_TIMEOUT = timedelta(hours=4)


def collective_timeout(env: Optional[Mapping[str, str]] = None) -> timedelta:
    """The process group's timeout: DEEPSPEED_TIMEOUT minutes from ``env`` (default: this process's)."""
    raw = (os.environ if env is None else env).get("DEEPSPEED_TIMEOUT", DEFAULT_TIMEOUT_MINUTES)
    try:
        minutes = int(raw)  # an integer, as deepspeed/constants.py parses it
    except ValueError:
        minutes = int(DEFAULT_TIMEOUT_MINUTES)
    return timedelta(minutes=minutes if minutes > 0 else int(DEFAULT_TIMEOUT_MINUTES))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def single_process_env() -> None:
    """Started without the DeepSpeed launcher (one process): give torch.distributed what it expects."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))


def init_distributed() -> tuple[int, int]:
    """(rank, world size), initialising torch.distributed through DeepSpeed when nothing has yet."""
    import torch.distributed as dist

    if not dist.is_initialized():
        # DeepSpeed compiles its ops on first use: ninja on PATH, no lock left by a killed build.
        put_interpreter_bin_on_path()
        for lock in clear_stale_build_locks():
            print(f"zerotui: removed {lock}, left by an op build that was killed", file=sys.stderr)
        single_process_env()
        import deepspeed
        from deepspeed.accelerator import get_accelerator

        # DeepSpeed's CPU accelerator would pick oneCCL when installed; gloo is what is tested here.
        backend = "gloo" if get_accelerator().device_name() == "cpu" else None
        # The timeout is passed, not left to DeepSpeed's import-time default, so that the value the
        # launcher's environment holds is the one in force.
        deepspeed.init_distributed(dist_backend=backend, timeout=collective_timeout())
        _default_timeout_for_new_groups(collective_timeout())
        if backend == "gloo":
            _release_shm_name()
    return dist.get_rank(), dist.get_world_size()


def _release_shm_name() -> None:
    """Unlink this rank's shared-memory buffer name once every rank has mapped every buffer.

    DeepSpeed's CPU collectives (csrc/cpu/comm/shm.cpp) create /dev/shm/deepspeed_allreduce_buffer_<uid>_
    <addr>_<port>_<rank>, ~69 MB each, map all ranks' buffers during init and never unlink them: each run
    left 69 MB of RAM per rank in /dev/shm until reboot (3.2 GB here after a day of tests). The mappings
    stay valid after the unlink and the memory is freed when the last rank exits, also after a kill -9."""
    import torch.distributed as dist

    dist.barrier()  # every rank has returned from shm_initialize, which maps all buffers
    name = (f"deepspeed_allreduce_buffer_{os.getuid()}_{os.environ.get('MASTER_ADDR', '')}_"
            f"{os.environ.get('MASTER_PORT', '')}_{dist.get_rank()}")
    try:
        os.unlink(os.path.join("/dev/shm", name))
    except OSError:
        pass  # not created (another backend, an older DeepSpeed) or already gone


def _default_timeout_for_new_groups(timeout: Any) -> None:
    """Make ``timeout`` the default of every process group created from now on.

    ZeRO's gradient and parameter collectives do not run on the default group but on DeepSpeed's clone
    of it (deepspeed/utils/groups.py, ``_clone_world_group``: ``new_group(ranks)`` without a timeout),
    which torch gives its own default — 30 min for gloo, 10 for NCCL — whatever DEEPSPEED_TIMEOUT says.
    Seen here: with DEEPSPEED_TIMEOUT=1 a stopped rank 1 left rank 0 waiting in a ZeRO-2 collective for
    more than 5 minutes (the hung-rank test in tests/deepspeed). torch reads these two module globals in
    ``_get_default_timeout`` when a group is made without one."""
    from torch.distributed import distributed_c10d as c10d

    for name in ("default_pg_timeout", "default_pg_nccl_timeout"):
        if isinstance(getattr(c10d, name, None), type(timeout)):
            setattr(c10d, name, timeout)


def rank0_work_group(world: int) -> Any:
    """A gloo group with a long timeout for barriers where the other ranks wait for rank 0's own work
    (tokenising, finishing a checkpoint); None with one process. Every rank must call this, in order."""
    if world == 1:
        return None
    import torch.distributed as dist

    return dist.new_group(backend="gloo", timeout=RANK0_WORK_TIMEOUT)


def rank0_first(world: int, rank: int, fn: Callable[[], Any], group: Any = None) -> Any:
    """Rank 0 runs ``fn`` (tokenising: it fills the cache), the other ranks then (a cache hit), so a
    node does the work once. Rank 0 reaches the barrier even when ``fn`` fails, or the others would
    wait forever; they then fail the same way on their own. ``group``: where to wait (a long-timeout
    group: tokenising a large corpus can outlast the collective timeout)."""
    if world == 1:
        return fn()
    import torch.distributed as dist

    if rank == 0:
        try:
            return fn()
        finally:
            dist.barrier(group=group)
    dist.barrier(group=group)
    return fn()
