"""One metric over a whole run, in bounded memory, ready to draw at about two points per column.

A 32-hour run logs hundreds of thousands of steps; the dashboard must show all of it ("zoom: all"), the
last hour and the last ten minutes, and never hold every point. A ``Series`` keeps buckets of
min / max / last / sum / count at a few resolutions:

* fine levels of fixed width (1 s and 8 s by default) that keep only their newest ``fine_capacity``
  buckets: 1200 one-second buckets cover the last 20 minutes, 1200 eight-second buckets 2.7 hours;
* one "all" level whose width doubles (neighbouring buckets merged in pairs) whenever it would pass
  ``all_capacity`` buckets, so it always holds the whole run at ``all_capacity / 2`` buckets or more.

Memory is therefore fixed per series (about 9 arrays × 4400 buckets × 8 bytes ≈ 320 KB) however long the
run. A query picks the finest level that still covers the asked window and merges its buckets into at
most ``points`` output buckets (one per chart column; the chart draws each bucket's min and max, so two
points per column: plotext rebuilds the whole figure on every refresh, and 50k raw points take
~0.4 s to draw where 240 take ~8 ms).

Points are added in batches of numpy arrays (``extend``): reading a long events file and following a
live one go through the same vectorised code. Time is the bucketing key; each bucket also remembers the
last step in it, so a chart can put steps on the x axis instead of wall-clock.

Pure: numpy only, no UI.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

_FIELDS = ("key", "t", "step", "lo", "hi", "last", "tot", "n", "m")


@dataclass
class View:
    """Buckets of one query, oldest first. ``lo``/``hi``/``last``/``mean`` are NaN where a bucket held
    no finite value (e.g. only NaN losses: ``m - n`` of them)."""

    t: np.ndarray        # time of the last point in the bucket (unix seconds)
    step: np.ndarray     # step of the last point in the bucket
    lo: np.ndarray
    hi: np.ndarray
    last: np.ndarray     # last finite value in the bucket
    mean: np.ndarray
    tot: np.ndarray      # sum of the finite values (e.g. skipped steps per bucket)
    n: np.ndarray        # finite values in the bucket
    m: np.ndarray        # all values in the bucket, non-finite included

    def __len__(self) -> int:
        return len(self.t)


class _Buckets:
    """Parallel arrays, one entry per bucket, oldest first. ``key`` is floor(t / width)."""

    __slots__ = _FIELDS + ("width",)

    def __init__(self, width: float) -> None:
        self.width = float(width)
        self.key = np.empty(0, np.int64)
        for name in _FIELDS[1:]:
            setattr(self, name, np.empty(0, np.int64 if name in ("n", "m") else np.float64))

    def __len__(self) -> int:
        return len(self.key)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return tuple(getattr(self, f) for f in _FIELDS)

    def set(self, arrays: Sequence[np.ndarray]) -> None:
        for name, arr in zip(_FIELDS, arrays):
            setattr(self, name, arr)

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays())


def _group(arrays: Sequence[np.ndarray], starts: np.ndarray) -> list[np.ndarray]:
    """Merge runs of buckets that begin at ``starts`` (sorted indices, first is 0) into one bucket each."""
    key, t, step, lo, hi, last, tot, n, m = arrays
    ends = np.empty(len(starts), np.int64)
    ends[:-1] = starts[1:] - 1
    ends[-1:] = len(key) - 1
    # The last finite value of a group is that of its last bucket holding any finite value.
    idx = np.arange(len(key))
    last_idx = np.maximum.reduceat(np.where(n > 0, idx, -1), starts)
    merged_last = np.where(last_idx >= 0, last[np.maximum(last_idx, 0)], np.nan)
    return [key[ends], t[ends], step[ends],
            np.fmin.reduceat(lo, starts), np.fmax.reduceat(hi, starts), merged_last,
            np.add.reduceat(tot, starts), np.add.reduceat(n, starts), np.add.reduceat(m, starts)]


def _starts(group_ids: np.ndarray) -> np.ndarray:
    """Indices where a non-decreasing id array changes value (always includes 0)."""
    if len(group_ids) == 0:
        return np.empty(0, np.int64)
    change = np.empty(len(group_ids), bool)
    change[0] = True
    np.not_equal(group_ids[1:], group_ids[:-1], out=change[1:])
    return np.flatnonzero(change)


def _aggregate(t: np.ndarray, step: np.ndarray, v: np.ndarray, width: float) -> list[np.ndarray]:
    """Raw points (sorted by t) -> buckets of ``width`` seconds."""
    key = np.floor(t / width).astype(np.int64)
    starts = _starts(key)
    finite = np.isfinite(v)
    if finite.all():  # the common case, about twice as fast: no masking, last = the bucket's last point
        ends = np.empty(len(starts), np.int64)
        ends[:-1] = starts[1:] - 1
        ends[-1:] = len(key) - 1
        counts = ends - starts + 1
        return [key[ends], t[ends], step[ends], np.minimum.reduceat(v, starts),
                np.maximum.reduceat(v, starts), v[ends], np.add.reduceat(v, starts), counts, counts.copy()]
    ones = finite.astype(np.int64)
    # Raw points are buckets of one point each; non-finite ones count in m but not in lo/hi/last/tot/n.
    arrays = (key, t, step, np.where(finite, v, np.inf), np.where(finite, v, -np.inf),
              np.where(finite, v, np.nan), np.where(finite, v, 0.0), ones, np.ones(len(v), np.int64))
    out = _group(arrays, starts)
    out[3] = np.where(out[7] > 0, out[3], np.nan)  # lo of an all-NaN bucket: NaN, not +inf
    out[4] = np.where(out[7] > 0, out[4], np.nan)
    return out


def _merge_into(level: _Buckets, new: list[np.ndarray]) -> None:
    """Append buckets; a first new bucket with the same key as the level's last one is folded into it."""
    if len(new[0]) == 0:
        return
    if len(level) and new[0][0] == level.key[-1]:
        both = [np.concatenate((old[-1:], add[:1])) for old, add in zip(level.arrays(), new)]
        folded = _group(both, np.zeros(1, np.int64))
        level.set([np.concatenate((old[:-1], f, add[1:])) for old, f, add in zip(level.arrays(), folded, new)])
    else:
        level.set([np.concatenate((old, add)) for old, add in zip(level.arrays(), new)])


def _coarsen(level: _Buckets) -> None:
    """Double the width: buckets 2k and 2k+1 become one (floor(t/2w) == floor(t/w) // 2)."""
    arrays = list(level.arrays())
    arrays[0] = arrays[0] // 2
    level.set(_group(arrays, _starts(arrays[0])))
    level.width *= 2


class Series:
    """A metric over a whole run; see the module docstring."""

    def __init__(self, fine_widths: Sequence[float] = (1.0, 8.0), fine_capacity: int = 1200,
                 all_capacity: int = 2048, all_width: float = 1.0) -> None:
        if fine_capacity < 2 or all_capacity < 4:
            raise ValueError("capacities must allow at least a few buckets")
        self.fine = [_Buckets(w) for w in sorted(fine_widths)]
        self.fine_capacity = fine_capacity
        # Per fine level, the newest time it dropped (old buckets past its capacity, or points skipped by
        # ``fine_until``): it covers any window that starts after that.
        self._dropped_t: list[Optional[float]] = [None] * len(self.fine)
        self.all = _Buckets(all_width)
        self.all_capacity = all_capacity
        self.count = 0                       # points ever added
        self.first_t: Optional[float] = None
        self.last_t: Optional[float] = None
        self.latest: Optional[float] = None  # last finite value
        self.latest_step: Optional[float] = None

    # -- adding -----------------------------------------------------------------------------------
    def append(self, t: float, step: float, value: Optional[float]) -> None:
        self.extend([t], [step], [np.nan if value is None else value])

    def extend(self, t: Sequence[float] | np.ndarray, step: Sequence[float] | np.ndarray,
               values: Sequence[float] | np.ndarray, fine_until: Optional[float] = None) -> None:
        """Add points in time order. A time earlier than one already seen (a clock stepped back, a
        resumed run on another machine) is treated as that latest time, so buckets stay ordered.

        ``fine_until``: when reading a whole file, the time of its last event. Points too old to survive
        in a fine level's newest ``fine_capacity`` buckets by then are not added to it (the level is
        marked as not covering the whole run), which saves two thirds of the work on long files."""
        t = np.asarray(t, dtype=np.float64)
        if len(t) == 0:
            return
        step = np.asarray(step, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        if not (len(t) == len(step) == len(v)):
            raise ValueError("t, step and values must have the same length")
        t = np.maximum.accumulate(t)
        if self.last_t is not None and t[0] < self.last_t:
            t = np.maximum(t, self.last_t)
        if self.first_t is None:
            self.first_t = float(t[0])
        self.last_t = float(t[-1])
        self.count += len(t)
        finite = np.flatnonzero(np.isfinite(v))
        if len(finite):
            self.latest = float(v[finite[-1]])
            self.latest_step = float(step[finite[-1]])
        for i, level in enumerate(self.fine):
            lo = 0
            if fine_until is not None:
                lo = int(np.searchsorted(t, fine_until - level.width * (self.fine_capacity + 1), "left"))
                if lo:
                    self._dropped(i, float(t[lo - 1]))
                if lo >= len(t):
                    continue
            _merge_into(level, _aggregate(t[lo:], step[lo:], v[lo:], level.width))
            extra = len(level) - self.fine_capacity
            if extra > 0:
                self._dropped(i, float(level.t[extra - 1]))
                level.set([a[extra:] for a in level.arrays()])
        # The all level: aggregate straight at its current width, then coarsen until it fits.
        _merge_into(self.all, _aggregate(t, step, v, self.all.width))
        while len(self.all) > self.all_capacity:
            _coarsen(self.all)

    # -- reading ----------------------------------------------------------------------------------
    def _dropped(self, i: int, t: float) -> None:
        old = self._dropped_t[i]
        self._dropped_t[i] = t if old is None else max(old, t)

    def _level_for(self, start: float) -> _Buckets:
        """The finest level holding everything from ``start`` on (else the whole-run level)."""
        for level, dropped in zip(self.fine, self._dropped_t):
            if len(level) and (dropped is None or dropped < start):
                return level
        return self.all

    def view(self, points: int, window_s: Optional[float] = None, end_t: Optional[float] = None) -> View:
        """At most ``points`` buckets covering the last ``window_s`` seconds before ``end_t`` (default:
        the newest point), or the whole run when ``window_s`` is None."""
        points = max(1, int(points))
        if self.last_t is None:
            return _empty_view()
        end = self.last_t if end_t is None else float(end_t)
        if window_s is None:
            assert self.first_t is not None
            start, level = self.first_t, self.all
        else:
            start = end - float(window_s)
            level = self._level_for(start)
        arrays = level.arrays()
        t = arrays[1]
        lo_i, hi_i = np.searchsorted(t, start, "left"), np.searchsorted(t, end, "right")
        arrays = [a[lo_i:hi_i] for a in arrays]
        if len(arrays[0]) > points:
            span = max(end - start, 1e-9)
            gid = np.clip(((arrays[1] - start) / span * points).astype(np.int64), 0, points - 1)
            arrays = _group(arrays, _starts(gid))
        _, t, step, lo, hi, last, tot, n, m = arrays
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n > 0, tot / np.maximum(n, 1), np.nan)
        return View(t=t, step=step, lo=lo, hi=hi, last=last, mean=mean, tot=tot, n=n, m=m)

    def nbytes(self) -> int:
        return sum(level.nbytes() for level in self.fine) + self.all.nbytes()

    def __len__(self) -> int:
        return self.count


def _empty_view() -> View:
    f, i = np.empty(0, np.float64), np.empty(0, np.int64)
    return View(t=f, step=f, lo=f, hi=f, last=f, mean=f, tot=f, n=i, m=i)
