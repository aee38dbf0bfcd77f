"""Checkpoints written while training goes on: the state is copied to host memory, a thread writes it.

DeepSpeed hands every file of a checkpoint to its checkpoint engine's ``save(state_dict, path)``.
``SnapshotEngine`` answers that call by copying the state dict (GPU tensors into pinned host buffers
on the training stream — ``PinnedPool`` —, host tensors by a memcpy, everything else deep-copied) and queueing the copy
for ``Writer``'s thread, which writes it with ``torch.save`` and fsyncs the file. The step loop waits
only for the copies: later kernels on the same stream run after them, so the optimizer cannot change
a tensor before it is copied, and the writer waits on a CUDA event before it reads the buffers.
torch.save releases the GIL while it writes, so the thread does not slow the Python loop (measured:
the main thread's longest pause while a 1 GiB save ran was 11 ms).

A file whose copy would not fit in the host RAM that is free (with a margin) is written at once, in
the foreground, as DeepSpeed's own engine would: a background save never pushes the machine into swap
or the OOM killer. ``checkpoint.py`` decides when a checkpoint is complete; this module only writes.
"""
from __future__ import annotations

import copy
import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

#: Host RAM left free after a snapshot (the page cache, the data loader, the rest of the machine).
MARGIN_BYTES = 2 << 30


def _tensor_bytes(obj: Any, seen: Optional[set[int]] = None) -> int:
    import torch

    seen = set() if seen is None else seen
    if isinstance(obj, torch.Tensor):
        if id(obj) in seen:
            return 0
        seen.add(id(obj))
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(_tensor_bytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(v, seen) for v in obj)
    return 0


class PinnedPool:
    """Pinned host buffers kept for the run's life, one per GPU tensor a checkpoint copies, reused by every
    save. Pinning memory is slow (cudaHostAlloc: a 15 GB checkpoint's buffers took ~15 s on the H200,
    measured in benchmarks/results/speed-*.json), so the first save copies into ordinary memory and the
    writer thread pins buffers of the same shapes afterwards, off the training thread; from the second
    save on, the copies are asynchronous transfers into them (0.3 s for the same 15 GB). ``want`` lets
    a dry run of a save (``RecordEngine``) name the shapes before the first save, so that one is fast too.
    ``pin=False`` makes ordinary buffers (tests on a machine without a GPU)."""

    def __init__(self, pin: bool = True) -> None:
        self.pin = pin
        self._free: dict[tuple, list[Any]] = {}
        self._all: dict[tuple, list[Any]] = {}
        self.wanted: list[tuple] = []       # keys a snapshot found no buffer for
        self.pinned_bytes = 0
        # The largest GPU storage a checkpoint holds: a foreground save (the end's, a stop's) goes through
        # torch.save, which copies each storage whole to the host (a ZeRO-1/2 model's flat 16-bit
        # buffer: 6.0 GiB for a 3B model, benchmarks/results/seed-scenarios-cards-h-2026-12-04.json), so
        # the pool leaves room for it (_grow_pool).
        self.largest_storage = 0

    def _seen(self, t: Any) -> None:
        try:
            self.largest_storage = max(self.largest_storage, int(t.untyped_storage().nbytes()))
        except Exception:  # noqa: BLE001 - a tensor without a storage of its own: nothing to leave room for
            pass

    @staticmethod
    def key(t: Any) -> tuple:
        return (tuple(t.shape), t.dtype)

    def take(self, t: Any) -> Optional[Any]:
        self._seen(t)
        free = self._free.get(self.key(t))
        if free:
            return free.pop()
        self.wanted.append(self.key(t))
        return None

    def want(self, obj: Any, seen: Optional[set[int]] = None) -> None:
        """Ask for a buffer for every tensor in ``obj`` that is not in host memory already."""
        import torch

        seen = set() if seen is None else seen
        if isinstance(obj, torch.Tensor):
            if id(obj) not in seen and obj.device.type != "cpu":
                seen.add(id(obj))
                self._seen(obj)
                self.wanted.append(self.key(obj))
        elif isinstance(obj, dict):
            for v in obj.values():
                self.want(v, seen)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                self.want(v, seen)

    def release_all(self) -> None:
        """Every buffer is free again (the job that used them is written)."""
        self._free = {k: list(v) for k, v in self._all.items()}

    def grow(self, room: int) -> None:
        """Pin a buffer for each wanted shape, while the pinned total stays within ``room`` bytes."""
        import torch

        wanted, self.wanted = self.wanted, []
        for shape, dtype in wanted:
            n = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
            if n > room:
                break
            buf = torch.empty(shape, dtype=dtype, pin_memory=self.pin)
            room -= n
            self.pinned_bytes += n
            self._all.setdefault((shape, dtype), []).append(buf)
        self.release_all()


def snapshot(obj: Any, memo: dict[int, Any], pool: Optional[PinnedPool]) -> Any:
    """A copy of ``obj`` in host memory that later training steps cannot change. Tensors seen twice
    stay one tensor (tied weights); views become compact copies (what DeepSpeed's clone is for).
    GPU tensors go into ``pool``'s pinned buffers when it has one of their shape (an asynchronous copy
    on the current stream), else into ordinary memory (a synchronous copy)."""
    import torch

    if isinstance(obj, torch.Tensor):
        key = id(obj)
        if key not in memo:
            t = obj.detach()
            if t.device.type == "cpu":
                memo[key] = t.clone()
            else:
                buf = pool.take(t) if pool is not None else None
                if buf is None:
                    memo[key] = t.to("cpu")
                else:
                    buf.copy_(t, non_blocking=True)
                    memo[key] = buf
        return memo[key]
    if isinstance(obj, dict):
        out = copy.copy(obj)  # keeps OrderedDict and friends; the values are replaced below
        for k, v in obj.items():
            out[k] = snapshot(v, memo, pool)
        return out
    if isinstance(obj, (list, tuple)):
        items = [snapshot(v, memo, pool) for v in obj]
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
    try:
        # Live objects (the ZeRO optimizer's loss scaler, schedulers' states) move on with training.
        return copy.deepcopy(obj)
    except Exception:  # noqa: BLE001 - an object that cannot be copied is saved as it is now
        return obj


def write_file(obj: Any, path: str) -> None:
    """torch.save, then fsync: the checkpoint's marker may only follow data that is on the disk."""
    import torch

    with open(path, "wb") as fh:
        torch.save(obj, fh)
        fh.flush()
        os.fsync(fh.fileno())


@dataclass
class WriteJob:
    """One checkpoint's files, written in order by the thread, then ``finish`` (also after a failure)."""

    files: list[tuple[Any, str, Any]] = field(default_factory=list)   # (snapshot, path, cuda event or None)
    finish: Optional[Callable[[Optional[BaseException]], None]] = None
    pool: Optional[PinnedPool] = None   # its buffers are free again once the files are written
    gate: Optional[threading.Event] = None  # the thread starts on this job once the gate opens
    done: threading.Event = field(default_factory=threading.Event)
    error: Optional[BaseException] = None
    foreground_files: int = 0   # files written at once for want of free host RAM


class Writer:
    """One background thread that writes queued checkpoint files; one checkpoint in flight at a time."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[Optional[WriteJob]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None

    def start(self, job: WriteJob) -> None:
        if self._thread is None or not self._thread.is_alive():
            # A daemon: a worker that must exit at once (kill, fatal error) leaves the checkpoint torn,
            # which resume already handles; it never hangs the process.
            self._thread = threading.Thread(target=self._run, name="zerotui-checkpoint-writer", daemon=True)
            self._thread.start()
        self._queue.put(job)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if job.gate is not None:
                job.gate.wait()
            try:
                for obj, path, event in job.files:
                    if event is not None:
                        event.synchronize()  # the pinned copies have landed
                    write_file(obj, path)
                job.files.clear()  # frees the host copy as soon as it is on disk
            except BaseException as exc:  # noqa: BLE001 - reported to the training thread, never lost
                job.error = exc
                job.files.clear()
            if job.pool is not None:
                _grow_pool(job.pool)
            try:
                if job.finish is not None:
                    job.finish(job.error)
            except BaseException as exc:  # noqa: BLE001
                job.error = job.error or exc
            job.done.set()


def pool_room(available: int, largest_storage: int) -> int:
    """How much more the pool may pin: the free host RAM less twice the margin and less the copy a
    foreground save makes of the largest GPU storage (PinnedPool.largest_storage), so the run's last
    checkpoint still has room after the pool took what it could."""
    return max(0, available - 2 * MARGIN_BYTES - largest_storage)


def _grow_pool(pool: PinnedPool) -> None:
    """After a job: its buffers are free again, and the shapes it lacked get pinned ones, as far as the
    free host RAM allows (pinned memory cannot be swapped out)."""
    import psutil

    pool.release_all()
    if pool.wanted:
        try:
            pool.grow(pool_room(psutil.virtual_memory().available, pool.largest_storage))
        except Exception:  # noqa: BLE001 - no pinned memory (a CPU build, a locked-memory limit): copy as before
            pool.wanted = []


class _EngineCalls:
    """The checkpoint-engine methods DeepSpeed calls around ``save`` (``DeepSpeedEngine.save_checkpoint``)."""

    name = "zerotui"

    def create(self, info: Any) -> None:
        pass

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        os.makedirs(path, exist_ok=exist_ok)

    def commit(self, info: Any) -> bool:
        return True

    def is_data_parallel_writer(self, dp_rank: int) -> bool:
        return dp_rank == 0

    def is_decoupled(self) -> bool:
        return False

    def preserves_storage_sharing(self) -> bool:
        # False: DeepSpeed then skips its own clone of each state dict on the GPU (a transient copy of
        # the weights in GPU memory); the snapshot already makes compact host copies.
        return False

    def load(self, path: str, map_location: Any = None) -> Any:  # pragma: no cover - never installed for loads
        raise RuntimeError(f"{type(self).__name__} only saves")


class RecordEngine(_EngineCalls):
    """A dry run of a save: records the shapes of the GPU tensors it would copy, copies and writes nothing."""

    def __init__(self, pool: PinnedPool) -> None:
        self.pool = pool

    def save(self, state_dict: Any, path: str) -> None:
        self.pool.want(state_dict)


class SnapshotEngine(_EngineCalls):
    """A DeepSpeed checkpoint engine (the methods ``DeepSpeedEngine.save_checkpoint`` calls) that fills a
    WriteJob instead of writing. Installed only for the duration of a save (``checkpoint.py``)."""

    def __init__(self, job: WriteJob, pool: Optional[PinnedPool]) -> None:
        self.job = job
        self.pool = pool
        job.pool = pool
        self.queued_bytes = 0

    def save(self, state_dict: Any, path: str) -> None:
        import psutil
        import torch

        need = _tensor_bytes(state_dict)
        if psutil.virtual_memory().available < self.queued_bytes + need + MARGIN_BYTES:
            self.job.foreground_files += 1
            write_file(state_dict, path)
            return
        obj = snapshot(state_dict, {}, self.pool)
        event = None
        if self.pool is not None and torch.cuda.is_initialized():
            event = torch.cuda.Event()
            event.record()
        self.queued_bytes += need
        self.job.files.append((obj, path, event))
