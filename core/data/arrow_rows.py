"""A ``datasets.Dataset`` as its Arrow table plus row numbers, and its list columns copied out chunk by chunk.

A selected, split or mixed dataset is a table plus an indices mapping. Asking datasets for a column of it
(or a batch) gathers one single-row slice object per row (``datasets.table.Table.fast_gather``): reading
the ``length`` column of 950k selected rows that way held about 650 MiB of Python and Arrow objects at
once, the cold-cache peak of 1M rows. pyarrow's own ``take`` on a chunked list column concatenates the
whole column first. So here the row numbers are a numpy array (8 bytes a row), the table is walked one
chunk (one record batch of the cache file) at a time, and each row's tokens are copied to their place in
the output: memory is a few numbers per row plus one chunk, whatever the order of the rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Rows of one chunk copied per numpy gather (bounds the index arrays for a very large chunk).
GATHER_ROWS = 8192


@dataclass
class Rows:
    """Rows ``rows`` (in that order) of the Arrow table ``table``."""

    table: Any          # pyarrow.Table
    rows: np.ndarray    # int64 row numbers into table

    def __len__(self) -> int:
        return int(self.rows.size)

    def take(self, which: np.ndarray) -> Rows:
        return Rows(self.table, self.rows[which])


def rows_of(ds: Any) -> Rows:
    """The dataset's rows as its table and row numbers, without datasets reading any row."""
    table = ds.data.table
    # ``_indices`` is how datasets keeps a select / shuffle / interleave: a uint64 column of row numbers
    # into ``data``; None means the rows in table order.
    indices = ds._indices
    if indices is None:
        return Rows(table, np.arange(table.num_rows, dtype=np.int64))
    return Rows(table, indices.column(0).to_numpy().astype(np.int64))


def scalars(part: Rows, name: str) -> np.ndarray:
    """A fixed-width column (e.g. ``length``) for the rows, in their order."""
    return part.table.column(name).to_numpy()[part.rows]


def scatter_lists(part: Rows, name: str, out: np.ndarray, starts: np.ndarray) -> None:
    """Copy row ``part.rows[i]``'s list ``name`` to ``out[starts[i]:starts[i] + its length]``, for every i."""
    if not len(part):
        return
    # One source without a mix: the rows are already ascending (the split keeps their order), so the
    # two extra row-sized arrays of a sort are not needed.
    ascending = bool(np.all(part.rows[1:] >= part.rows[:-1]))
    order = None if ascending else np.argsort(part.rows, kind="stable")
    ranked = part.rows if order is None else part.rows[order]
    base = 0
    for chunk in part.table.column(name).chunks:
        n = len(chunk)
        lo, hi = np.searchsorted(ranked, [base, base + n])
        if hi > lo:
            offsets = chunk.offsets.to_numpy()
            values = chunk.values.to_numpy(zero_copy_only=False)
            for a in range(lo, hi, GATHER_ROWS):
                b = min(a + GATHER_ROWS, hi)
                local = ranked[a:b] - base
                src = offsets[local].astype(np.int64)
                lengths = offsets[local + 1].astype(np.int64) - src
                dst = starts[a:b] if order is None else starts[order[a:b]]
                out[spans(dst, lengths)] = values[spans(src, lengths)]
        base += n


def spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``starts[0]..starts[0]+lengths[0]-1``, then the same for row 1, ... as one int64 array."""
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if ends.size else 0
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
