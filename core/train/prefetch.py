"""Reading the files a run is about to load into the page cache, in a background thread.

A worker spends its first seconds importing torch, transformers and DeepSpeed and loading the tokenizer
with the disk idle; then it reads the model's weights, and on a resume DeepSpeed reads the checkpoint
(weights and optimizer states) file after file — 25 s for a 15.4 GB checkpoint on a ~600 MB/s disk.
Reading those files from the worker's first moment overlaps the disk with the imports, and the later
reads come from memory. Only as much as fits in half of the RAM available now is read (more would push
out what was read first, or other programs' cache). ``ZEROTUI_PREFETCH=0`` turns it off (to measure it).

Several threads read at once (``READERS``): a virtual disk or an NVMe drive serves more with several
requests in flight (the H200 machine's disk: 1.48 GB/s with one reader, 1.78 GB/s with four;
benchmarks/results/startup-readahead-2026-12-02.json). They take 64 MB pieces in file order, so the
first files are ready first.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

CHUNK_BYTES = 16 << 20
PIECE_BYTES = 64 << 20
READERS = 4
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


def start(files: list[Path], budget: int | None = None, readers: int = READERS) -> list[threading.Thread]:
    """Read ``files`` (as many as the budget allows) in daemon threads; the threads (none when there is
    nothing to do)."""
    if os.environ.get("ZEROTUI_PREFETCH", "1") == "0" or not files:
        return []
    chosen = within_budget(files, budget if budget is not None else _available_bytes() // 2)
    if not chosen:
        return []
    pieces = _Pieces(chosen)
    threads = [threading.Thread(target=pieces.read_all, name=f"zerotui-prefetch-{i}", daemon=True)
               for i in range(max(1, readers))]
    for t in threads:
        t.start()
    return threads


class _Pieces:
    """(file, offset) pieces handed out in order to several readers; bytes read in ``done``."""

    def __init__(self, files: list[Path]) -> None:
        self._iter = self._pieces(files)
        self._lock = threading.Lock()
        self.done = 0

    @staticmethod
    def _pieces(files: list[Path]) -> Iterator[tuple[Path, int]]:
        for f in files:
            try:
                size = f.stat().st_size
            except OSError:
                continue
            yield from ((f, off) for off in range(0, size, PIECE_BYTES))

    def _next(self) -> tuple[Path, int] | None:
        with self._lock:
            return next(self._iter, None)

    def read_all(self) -> None:
        buf = memoryview(bytearray(CHUNK_BYTES))
        while (piece := self._next()) is not None:
            n = _read_piece(*piece, buf)
            with self._lock:
                self.done += n


def _read_piece(path: Path, offset: int, buf: memoryview) -> int:
    """Read ``PIECE_BYTES`` of ``path`` from ``offset`` (``readinto`` releases the GIL); bytes read.
    A file gone or unreadable is skipped: the real read names the problem, with its context."""
    done = 0
    try:
        with open(path, "rb", buffering=0) as fh:
            fh.seek(offset)
            while done < PIECE_BYTES and (n := fh.readinto(buf[:min(CHUNK_BYTES, PIECE_BYTES - done)])):
                done += n
    except OSError:
        pass
    return done


def read_through(files: list[Path]) -> int:
    """Read every file once, in one thread; bytes read."""
    pieces = _Pieces(files)
    pieces.read_all()
    return pieces.done


def start_for_run(model: str, checkpoints: Path | None, rank: int) -> None:
    """The worker's read-ahead: the model's weight files and, when ``checkpoints`` is given (a resume),
    the newest complete checkpoint's files for ``rank``. A failure here only loses the head start: the
    loads that follow read the same files and report for real."""
    try:
        from zerotui.core.train.checkpoint import newest_complete

        files = weight_files(model)
        newest = newest_complete(checkpoints) if checkpoints is not None else None
        if newest is not None:
            files += checkpoint_files(newest.path, rank)
        start(files)
    except Exception:  # noqa: BLE001
        pass
