"""Reading the files a run is about to load into the page cache, in a background thread.

A worker spends its first seconds importing torch, transformers and DeepSpeed and loading the tokenizer
with the disk idle; then it reads the model's weights, and on a resume DeepSpeed reads the checkpoint
(weights and optimizer states) file after file — 25 s for a 15.4 GB checkpoint on a ~600 MB/s disk.
Reading those files from the worker's first moment overlaps the disk with the imports, and the later
reads come from memory. Only as much as fits in half of the RAM available now is read (more would push
out what was read first, or other programs' cache). ``ZEROTUI_PREFETCH=0`` turns it off (to measure it).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

CHUNK_BYTES = 16 << 20
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def checkpoint_files(folder: Path, rank: int) -> list[Path]:
    """The files DeepSpeed's load_checkpoint reads on ``rank``: the shared ones and this rank's shards
    (``zero_pp_rank_<rank>_…``; other ranks' shards are theirs to read)."""
    mine = f"zero_pp_rank_{rank}_"
    return [p for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink() and (not p.name.startswith("zero_pp_rank_") or p.name.startswith(mine))]


def weight_files(model: str) -> list[Path]:
    """A local model folder's weight files (none for a hub id or a built-in shape)."""
    folder = Path(model).expanduser()
    if not folder.is_dir():
        return []
    return [p for p in sorted(folder.iterdir()) if p.is_file() and p.suffix in WEIGHT_SUFFIXES]


def within_budget(files: Iterable[Path], budget: int) -> list[Path]:
    """The leading files whose sizes add up to at most ``budget`` bytes."""
    chosen, total = [], 0
    for f in files:
        try:
            size = f.stat().st_size
        except OSError:
            continue
        if total + size > budget:
            break
        chosen.append(f)
        total += size
    return chosen


def _available_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def start(files: list[Path], budget: int | None = None) -> threading.Thread | None:
    """Read ``files`` (as many as the budget allows) in a daemon thread; None when there is nothing to do."""
    if os.environ.get("ZEROTUI_PREFETCH", "1") == "0" or not files:
        return None
    chosen = within_budget(files, budget if budget is not None else _available_bytes() // 2)
    if not chosen:
        return None
    thread = threading.Thread(target=read_through, args=(chosen,), name="zerotui-prefetch", daemon=True)
    thread.start()
    return thread


def read_through(files: list[Path]) -> int:
    """Read every file once into a reused buffer (``readinto`` releases the GIL); bytes read."""
    buf = memoryview(bytearray(CHUNK_BYTES))
    done = 0
    for f in files:
        try:
            with open(f, "rb", buffering=0) as fh:
                if hasattr(os, "posix_fadvise"):
                    os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
                while n := fh.readinto(buf):
                    done += n
        except OSError:
            continue  # gone or unreadable: the real read names the problem, with its context
    return done
