"""The assembled train / eval sets on disk as flat ``.npy`` arrays, opened memory-mapped.

A ``TokenSet`` is three flat arrays (ids, labels, offsets; plus document offsets when packed). Written
here from the mixed, split Arrow rows (``arrow_rows``: chunk by chunk, never an object per row) and
opened with ``numpy.load(mmap_mode="c")``, the training process holds only the pages it reads: host
memory stays flat as the data grows, and a resume opens the set in a moment. The folder is written under a temporary name and renamed whole, so
a reader never sees half a set (a crash or a full disk leaves no folder at all).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch
from zerotui.core.data.arrow_rows import Rows, scalars, scatter_lists
from zerotui.core.data.tokenise import IGNORE, TokenSet, pack_groups

NAMES = ("ids", "labels", "offsets", "doc_offsets")


def write_store(folder: Path, sets: dict[str, Rows], packing: bool, seq_len: int,
                report: Callable[[dict[str, int]], dict]) -> dict[str, TokenSet]:
    """Write ``sets`` (name -> rows of a table with input_ids, labels, length) to ``folder``; their TokenSets.
    ``report`` gets the number of sequences of each set and returns what report.json holds."""
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        counts = {name: _write_set(tmp, name, ds, packing, seq_len) for name, ds in sets.items()}
        (tmp / "report.json").write_text(json.dumps(report(counts)), encoding="utf-8")
        try:
            os.replace(tmp, folder)
        except OSError:
            if not (folder / "report.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # another process wrote the same set first: same content
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {name: _open_set(folder, name) for name in sets}


def read_store(folder: Path) -> Optional[tuple[dict[str, TokenSet], dict]]:
    """The sets and the report in ``folder``, or None when there is none (or it is unreadable)."""
    try:
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        names = sorted({p.name.split(".")[0] for p in folder.glob("*.ids.npy")})
        return {n: _open_set(folder, n) for n in names}, report
    except (OSError, ValueError):
        return None


def _write_set(folder: Path, name: str, part: Rows, packing: bool, seq_len: int) -> int:
    lengths = scalars(part, "length")  # int32: a row fits seq_len; the sums below are int64
    docs = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, dtype=np.int64, out=docs[1:])
    total = int(docs[-1])
    ids = _array(folder / f"{name}.ids.npy", np.int32, total)
    labels = _array(folder / f"{name}.labels.npy", np.int32, total)
    if total:
        scatter_lists(part, "input_ids", ids, docs[:-1])
        scatter_lists(part, "labels", labels, docs[:-1])
    if packing:
        # The first label of every packed document is never a target: see ``tokenise.pack``.
        labels[docs[:-1][lengths > 0]] = IGNORE
        offsets = docs[pack_groups(lengths.tolist(), seq_len)]
        np.save(folder / f"{name}.doc_offsets.npy", docs)
    else:
        offsets = docs
    np.save(folder / f"{name}.offsets.npy", offsets)
    for arr in (ids, labels):
        if isinstance(arr, np.memmap):
            arr.flush()
    if not total:
        np.save(folder / f"{name}.ids.npy", ids)
        np.save(folder / f"{name}.labels.npy", labels)
    return int(offsets.size) - 1


def _array(path: Path, dtype: Any, n: int) -> np.ndarray:
    if n == 0:  # a zero-length file cannot be mapped
        return np.zeros(0, dtype=dtype)
    return np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(n,))


def _open_set(folder: Path, name: str) -> TokenSet:
    def load(kind: str) -> Optional[torch.Tensor]:
        path = folder / f"{name}.{kind}.npy"
        if not path.exists():
            return None
        # "c": copy-on-write, so torch gets a writable view; nothing is written back to the file.
        arr = np.load(path, mmap_mode="c") if path.stat().st_size > 128 else np.load(path)
        return torch.from_numpy(arr)

    ids, labels, offsets = load("ids"), load("labels"), load("offsets")
    if ids is None or labels is None or offsets is None:
        raise OSError(f"{folder}: the {name} set is incomplete")
    return TokenSet(ids, labels, offsets, load("doc_offsets"))
