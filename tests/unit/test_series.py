"""core.events.series: the whole run in bounded memory, and queries that keep every extreme."""
from __future__ import annotations

import numpy as np
import pytest

from zerotui.core.events.series import Series

T0 = 1_767_225_600.0


def _data(n: int, dt: float = 0.384, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = T0 + np.arange(n) * dt
    return t, np.arange(1, n + 1, dtype=float), rng.normal(2.0, 0.5, n)


def test_whole_run_view_keeps_every_point_min_max_and_count():
    t, step, v = _data(300_000)  # 32 hours at 0.384 s a step
    s = Series()
    s.extend(t, step, v)
    view = s.view(160)
    assert len(view) <= 160
    assert view.m.sum() == 300_000
    assert np.nanmin(view.lo) == v.min() and np.nanmax(view.hi) == v.max()
    assert view.step[-1] == 300_000 and view.t[-1] == t[-1]
    assert view.last[-1] == v[-1]
    # means are exact per bucket: their weighted average is the overall mean
    assert np.isclose(np.sum(view.mean * view.n) / view.n.sum(), v.mean())


def test_memory_is_bounded_however_long_the_run():
    s = Series()
    sizes = []
    for k in range(10):  # 10 × 100k points ≈ 107 hours
        t, step, v = _data(100_000, seed=k)
        s.extend(t + k * 100_000 * 0.384, step + k * 100_000, v)
        sizes.append(s.nbytes())
    assert s.count == 1_000_000
    assert max(sizes) < 400_000  # ~9 arrays × ~4400 buckets × 8 bytes
    assert sizes[-1] <= sizes[1] * 1.1  # flat, not growing with the run
    assert len(s.all) <= s.all_capacity


@pytest.mark.parametrize("window", [600.0, 3600.0])
def test_windows_come_from_a_fine_level_and_cover_only_the_window(window):
    t, step, v = _data(300_000)
    s = Series()
    s.extend(t, step, v)
    view = s.view(80, window_s=window)
    assert len(view) <= 80
    expected = np.count_nonzero(t >= t[-1] - window)
    # a fine level's first bucket may straddle the window start: at most one bucket's worth more
    assert expected <= view.m.sum() <= expected + 8 / 0.384 + 1
    inside = v[t >= t[-1] - window]
    assert np.nanmax(view.hi) >= inside.max() and np.nanmin(view.lo) <= inside.min()
    # the whole run's view is coarser: the window view resolves more of the last hour
    assert view.t[0] >= t[-1] - window - 8


def test_batches_of_any_size_give_the_same_buckets_as_one_batch():
    t, step, v = _data(20_000)
    whole, pieces, single = Series(), Series(), Series()
    whole.extend(t, step, v)
    cuts = [0, 1, 7, 100, 3333, 3334, 10_000, 19_999, 20_000]
    for a, b in zip(cuts, cuts[1:]):
        pieces.extend(t[a:b], step[a:b], v[a:b])
    for i in range(0, 2000):
        single.append(t[i], step[i], v[i])
    single.extend(t[2000:], step[2000:], v[2000:])
    for other in (pieces, single):
        for window in (None, 600.0, 3600.0):
            a, b = whole.view(100, window), other.view(100, window)
            for field in ("t", "step", "lo", "hi", "last", "n", "m"):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
            np.testing.assert_allclose(a.mean, b.mean)


def test_non_finite_values_are_counted_but_never_drawn():
    t = T0 + np.arange(10.0)
    v = np.array([1.0, np.nan, 3.0, np.inf, np.nan, np.nan, 2.0, -np.inf, 5.0, np.nan])
    s = Series(fine_widths=(2.0,))
    s.extend(t, np.arange(10.0), v)
    view = s.view(100, window_s=100)
    assert view.m.sum() == 10 and view.n.sum() == 4
    assert np.nanmax(view.hi) == 5.0 and np.nanmin(view.lo) == 1.0
    # bucket [T0+4, T0+6) held only NaNs: no value, but it is there
    empty = view.n == 0
    assert empty.any() and np.isnan(view.lo[empty]).all() and np.isnan(view.last[empty]).all()
    assert s.latest == 5.0  # the last finite value, not the trailing NaN


def test_a_clock_that_steps_back_keeps_buckets_in_order():
    s = Series()
    s.extend([T0, T0 + 10, T0 + 20], [1, 2, 3], [1.0, 2.0, 3.0])
    s.extend([T0 + 5, T0 + 30], [4, 5], [4.0, 5.0])  # e.g. a resumed worker on a machine behind in time
    view = s.view(100, window_s=1000)
    assert np.all(np.diff(view.t) > 0)
    assert view.m.sum() == 5 and s.last_t == T0 + 30


def test_empty_series_and_mismatched_input():
    s = Series()
    assert len(s.view(50)) == 0 and len(s.view(50, window_s=60)) == 0
    with pytest.raises(ValueError):
        s.extend([T0, T0 + 1], [1], [1.0, 2.0])


def test_fine_until_skips_only_what_the_fine_levels_would_drop():
    t, step, v = _data(50_000)  # 5.3 hours, dense (2.6 points a second)
    full, quick = Series(), Series()
    full.extend(t, step, v)
    for a in range(0, 50_000, 7000):  # a file read in chunks, knowing its last time
        quick.extend(t[a:a + 7000], step[a:a + 7000], v[a:a + 7000], fine_until=t[-1])
    for window in (None, 600.0, 3600.0):
        a, b = full.view(100, window), quick.view(100, window)
        for field in ("t", "lo", "hi", "last", "m"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    # live points afterwards land as usual
    quick.extend(t[-1:] + 1, step[-1:] + 1, [9.0])
    assert quick.view(100, 600).hi.max() == 9.0
