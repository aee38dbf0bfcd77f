"""Loading a checkpoint's files mapped, not copied: DeepSpeed's checkpoint engine with ``load`` through
``torch.load(..., mmap=True)``.

DeepSpeed's own engine reads every file into fresh host memory with ``torch.load`` before restoring the
engine from it: on the H200 a 15.4 GB checkpoint (1.1B full fine-tune, Adam states) took 24 s to load with
its files already in the page cache (``benchmarks/results/startup-c-2026-12-02.json``), where the disk
reads them in ~9 s. Mapped, the tensors are views of the page cache (filled ahead by
``core/train/prefetch.py``) and restoring copies straight from it. The mapping is private (copy-on-write):
writing a mapped tensor never writes the file.

What must not stay mapped: state that lives on after the load. torch's ``Optimizer.load_state_dict``
keeps a loaded tensor as it is when its dtype and device already match — an optimizer on the CPU
(offload, or a CPU run) would hold its Adam moments as views of the checkpoint file, and one surviving
view keeps the whole file's mapping. The file would then hold its disk space after keep-last-K prunes
it, until the process ends. So after the load every optimizer tensor that lies in a mapping of a
loaded file is replaced by a copy (``release``); on a GPU run there are none (the state was copied to
the device), on the CPU this is the copy ``torch.load`` would have made, from the page cache.
A file ``torch.load`` cannot map (written by the old, non-zip format) is loaded the ordinary way.

Never a full unpickle (DeepSpeed's own engine turns torch's weights-only guard off, and a file planted in
the run folder would run code): every file, mapped or not, is read ``weights_only=True`` with the classes DeepSpeed
pickles into its checkpoints allowed (core/deepspeed/safe_globals.py). A file holding anything else is
refused unread (``pickle.UnpicklingError``; core/train/checkpoint.py names the checkpoint).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator

MAPS = "/proc/self/maps"


class MmapLoads:
    """Wraps the engine's checkpoint engine: everything but ``load`` is the wrapped one's. ``paths``: the
    files it mapped."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.paths: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def load(self, path: str, map_location: Any = None) -> Any:
        import torch

        from zerotui.core.deepspeed.safe_globals import deepspeed_safe_globals

        with torch.serialization.safe_globals(deepspeed_safe_globals()):
            try:
                loaded = torch.load(path, map_location=map_location, weights_only=True, mmap=True)
            except RuntimeError as err:
                if "mmap" not in str(err):
                    raise
                return torch.load(path, map_location=map_location, weights_only=True)  # an old-format file
        self.paths.append(str(path))
        return loaded


@contextmanager
def mapped_loads(engine: Any) -> Iterator[None]:
    """``engine.load_checkpoint`` inside this block reads its files mapped; on leaving it, no optimizer
    state of the engine is left mapped (``release``)."""
    own = engine.checkpoint_engine
    wrapper = MmapLoads(own)
    engine.checkpoint_engine = wrapper
    try:
        yield
    finally:
        engine.checkpoint_engine = own
        if wrapper.paths:
            release(_optimizers(engine), mapped_ranges(wrapper.paths))


def mapped_ranges(paths: Iterable[str], maps: str = MAPS) -> list[tuple[int, int]]:
    """Address ranges where ``paths`` are mapped in this process (a pruned file reads "(deleted)")."""
    wanted = set(paths)
    ranges = []
    try:
        with open(maps, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.rstrip("\n").split(maxsplit=5)
                if len(parts) == 6 and parts[5].removesuffix(" (deleted)") in wanted:
                    lo, hi = parts[0].split("-")
                    ranges.append((int(lo, 16), int(hi, 16)))
    except OSError:
        pass  # no /proc: nothing is released, the files only keep their space until the process ends
    return ranges


def _optimizers(engine: Any) -> list[Any]:
    """The engine's optimizer and the ones it wraps (ZeRO and bf16 wrappers hold the torch optimizer)."""
    from zerotui.core.train.optimizer_state import optimizer_chain

    return optimizer_chain(getattr(engine, "optimizer", None))


def release(optimizers: Iterable[Any], ranges: list[tuple[int, int]]) -> int:
    """Replace every optimizer tensor (state and param groups) that lies in ``ranges`` by a copy; bytes
    copied."""
    import torch

    if not ranges:
        return 0

    def mapped(t: Any) -> bool:
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or t.numel() == 0:
            return False
        ptr = t.data_ptr()
        return any(lo <= ptr < hi for lo, hi in ranges)

    copied = 0

    def fix(d: dict) -> None:
        nonlocal copied
        for k, v in list(d.items()):
            if mapped(v):
                d[k] = v.clone()
                copied += v.numel() * v.element_size()

    for opt in optimizers:
        state = getattr(opt, "state", None)
        if isinstance(state, dict):
            for per_param in state.values():
                if isinstance(per_param, dict):
                    fix(per_param)
        for group in getattr(opt, "param_groups", None) or []:
            if isinstance(group, dict):
                fix(group)
    return copied
