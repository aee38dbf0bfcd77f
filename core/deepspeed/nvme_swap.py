"""Where a run's NVMe offload writes its swap files, and taking them away when the run is over.

DeepSpeed writes NVMe offload's tensors under the ``nvme_path`` of its config
(``<nvme_path>/zero_stage_3/optimizer/rank<R>/*.swp``, ``.../<dtype>params/rank<R>/``) and leaves them
there when the process ends. Given the user's folder as it is, two runs sharing it write the same file
names (each run's optimizer state is ``<param id>.tensor.swp``), and every finished run leaves its
optimizer state behind: 16 bytes per trainable weight, 112 GB for a 7B full fine-tune. So each run
writes into a folder of its own inside the user's (``swap_dir``), and the run's supervisor removes it
once every process of the run has exited (``remove_swap``), whatever the ending: a checkpoint holds the
optimizer state a resume needs, and DeepSpeed writes the swap files again from it.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Optional, Union

from zerotui.core.hardware.disks import allocated_bytes

#: The run's folder inside the user's ``nvme_path``: this prefix and the run folder's name.
SWAP_PREFIX = "zerotui-swap-"


def swap_dir(nvme_path: Union[str, Path], run_dir: Optional[Union[str, Path]]) -> Path:
    """The folder the run at ``run_dir`` swaps to; the user's folder itself where there is no run
    (``zerotui config`` exports a ds_config for the user to run as they like)."""
    base = Path(nvme_path).expanduser()
    return base / f"{SWAP_PREFIX}{Path(run_dir).name}" if run_dir is not None else base


def remove_swap(nvme_path: Union[str, Path, None], run_dir: Union[str, Path]) -> Optional[str]:
    """Remove the run's swap folder; a sentence saying what was removed (or could not be), None where
    there was nothing. Only the run's own folder is touched, never ``nvme_path`` itself: a tampered plan
    can point ``nvme_path`` anywhere, and the name ``swap_dir`` gives is all that is removed there. A
    symlink in its place is unlinked, not followed."""
    if nvme_path is None:
        return None
    target = swap_dir(nvme_path, run_dir)
    try:
        if target.is_symlink():
            target.unlink()
            return f"removed the link {target} in place of the NVMe swap folder (not followed)"
        if not target.is_dir():
            return None
        size = allocated_bytes(target)
        shutil.rmtree(target)
    except OSError as err:
        return f"could not remove the NVMe swap folder {target}: {err.strerror or err}; delete it by hand"
    return f"removed the NVMe swap folder {target} ({size / 2**30:.2f} GiB)"


#: DeepSpeed's async I/O op does not check what its writes return: a swap file written on a full disk
#: comes out short, and reading it back fails this assertion, which aborts the process
#: (ops/csrc/aio/py_lib/deepspeed_py_io_handle.cpp). Seen on a 12 MB disk with --force.
AIO_SHORT_READ = "is_valid_bytes_to_read"
#: Less free room than this on the swap folder's disk when a run died counts as a full disk.
FULL_DISK_BYTES = 64 << 20
#: How much of worker.log's end is searched for DeepSpeed's last words (an assertion, a failed mlock()).
LOG_TAIL_BYTES = 256 << 10


def log_tail(log: Path) -> bytes:
    """The end of a run's worker.log, where a native abort's message is; b"" where it cannot be read."""
    from zerotui.core.safe_read import open_file

    try:
        with open_file(log, follow=False) as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - LOG_TAIL_BYTES))
            return fh.read(LOG_TAIL_BYTES)
    except OSError:
        return b""


def full_disk_cause(nvme_path: Union[str, Path, None], run_dir: Union[str, Path], log: Path,
                    needed: Optional[int]) -> Optional[str]:
    """Why a run with NVMe offload died, where its swap folder's disk is the reason: the assertion DeepSpeed's
    async I/O aborts with after a short write, or a disk with almost no room left (called before the swap
    folder is removed, while it still holds what the run wrote). ``needed``: the estimate's NVMe bytes.
    None where neither is seen."""
    if nvme_path is None:
        return None
    from zerotui.core.hardware.disks import free_bytes_at
    from zerotui.core.sizes import format_bytes

    target = swap_dir(nvme_path, run_dir)
    aborted = AIO_SHORT_READ.encode() in log_tail(log)
    free = free_bytes_at(target)
    full = free is not None and free < FULL_DISK_BYTES
    if not (aborted or full):
        return None
    what = ("DeepSpeed's async I/O aborted reading back a swap file shorter than it had written"
            if aborted else "the disk had no room left")
    room = f" ({format_bytes(free)} free when the run ended)" if free is not None else ""
    need = f"; the plan needs about {format_bytes(needed)} there" if needed else ""
    return (f"the NVMe swap folder's disk ({target.parent}) filled up{room}: {what}{need}. Free that much "
            f"there and `zerotui resume {Path(run_dir).name}` goes on from the last complete checkpoint, or "
            "start the run again with --nvme-path on a disk that has the room")


#: DeepSpeed 0.19.8's parameter swapper (partitioned_param_swapper.py, swap_in) when every buffer of
#: offload_param's pool is taken. A gathered weight keeps the buffer its partition was read into while it
#: is used again within stage3_max_reuse_distance elements, and every weight is (in backward); from the
#: second step the read-ahead (partitioned_param_coordinator.py, __prefetch_nvme_param_partitions) takes
#: the free ones, and a weight it did not read ahead then finds none. Seen on the GPU at the second step of
#: a 1.1B plan (benchmarks/results/nvme-gpu-2026-12-05-2.json) and on the CPU with every weight swapped
#: (nvme-weights-cpu-2026-12-05.json). zerotui gives such plans a reuse distance of 0 (config.py).
BUFFER_SHORTAGE = ("Not enough buffers", "Not enough swap in buffers")


def buffer_shortage(exc: BaseException, plan: Any) -> Optional[str]:
    """The reason for a run whose weights on NVMe ran out of DeepSpeed's swap buffers; None otherwise.
    Resuming would meet it again at the same step, so the way on is another plan."""
    text = str(exc)
    if not any(marker in text for marker in BUFFER_SHORTAGE):
        return None
    count = getattr(plan, "offload_buffer_count", None)
    pool = f"its {count} buffers" if count else "its buffers (offload_buffer_count, DeepSpeed's default 5)"
    distance = getattr(plan, "stage3_max_reuse_distance", None)
    kept = (f"this plan sets stage3_max_reuse_distance {distance}, so a weight used again within that many "
            "elements (every weight is, in backward) keeps its buffer" if distance
            else "the weights still held theirs")
    return (f"DeepSpeed's NVMe weight swapper ran out of {pool} ({text.strip().splitlines()[0][:120]}): its "
            f"read-ahead had taken the free buffers and {kept}. Use --stage3-max-reuse-distance 0 (zerotui's "
            "choice with the weights on NVMe: each weight gives its buffer back after use), or keep the weights "
            "off NVMe: --offload-params cpu (host RAM) or none; the optimizer can stay on NVMe")


def swap_io_failure(exc: BaseException, nvme_path: Union[str, Path, None],
                    run_dir: Union[str, Path, None]) -> Optional[str]:
    """A failure raised inside DeepSpeed's swapping (``runtime/swap_tensor``: a swap file that could not be
    read or written, which DeepSpeed reports as a bare AssertionError), said with what the run's swap folder
    looks like now; None for any other failure."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if nvme_path is None or not any("/swap_tensor/" in f.filename.replace("\\", "/") for f in frames):
        return None
    from zerotui.core.hardware.disks import free_bytes_at
    from zerotui.core.sizes import format_bytes

    target = swap_dir(nvme_path, run_dir)
    free = free_bytes_at(target)
    if not target.is_dir():
        state = f"the swap folder {target} is gone: something removed it while the run was going"
    elif free is not None and free < FULL_DISK_BYTES:
        state = f"the disk holding {target} is full ({format_bytes(free)} free)"
    else:
        state = f"the swap folder {target} is there" + (f", {format_bytes(free)} free on its disk" if free else "")
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"DeepSpeed could not read or write an NVMe offload swap file ({detail[:200]}): {state}"
