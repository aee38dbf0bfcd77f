"""Loading a checkpoint's files mapped, not copied: DeepSpeed's checkpoint engine with ``load`` through
``torch.load(..., mmap=True)``.

DeepSpeed's own engine reads every file into fresh host memory with ``torch.load`` before restoring the
engine from it: on the H200 a 15.4 GB checkpoint (1.1B full fine-tune, Adam states) took 24 s to load with
its files already in the page cache (``benchmarks/results/startup-c-2026-12-02.json``), where the disk
reads them in ~9 s. Mapped, the tensors are views of the page cache (filled ahead by
``core/train/prefetch.py``) and restoring copies straight from it. The mapping is private (copy-on-write):
an optimizer state restored in place on the CPU becomes ordinary memory where it is written and never
writes to the file; a file pruned later stays readable while mapped.
A file ``torch.load`` cannot map (written by the old, non-zip format) is loaded the ordinary way.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


class MmapLoads:
    """Wraps the engine's checkpoint engine: everything but ``load`` is the wrapped one's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def load(self, path: str, map_location: Any = None) -> Any:
        import torch

        try:
            return torch.load(path, map_location=map_location, weights_only=False, mmap=True)
        except RuntimeError as err:
            if "mmap" not in str(err):
                raise
            return self._inner.load(path, map_location=map_location)


@contextmanager
def mapped_loads(engine: Any) -> Iterator[None]:
    """``engine.load_checkpoint`` inside this block reads its files mapped."""
    own = engine.checkpoint_engine
    engine.checkpoint_engine = MmapLoads(own)
    try:
        yield
    finally:
        engine.checkpoint_engine = own
