"""Durations, clock times and rates as the dashboard and ``zerotui runs`` print them.

Short and fixed-width-ish, because they sit in narrow panes: ``45s``, ``12m 05s``, ``3h 12m``,
``2d 04h``. Clock times are local (the user's terminal), with the day added when it is not today's.
"""
from __future__ import annotations

import math
import time
from typing import Optional


def format_duration(seconds: Optional[float]) -> str:
    """``None`` -> ``'—'``; 45 -> ``'45s'``; 725 -> ``'12m 05s'``; 11520 -> ``'3h 12m'``."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    s = int(max(0.0, seconds) + 0.5)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {(s % 3600) // 60:02d}m"
    return f"{s // 86400}d {(s % 86400) // 3600:02d}h"


def format_ago(t: Optional[float], now: Optional[float] = None) -> str:
    """How long ago ``t`` was: ``'5m 00s ago'``; ``'never'`` when there is no time."""
    if t is None or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
        return "never"
    return f"{format_duration((time.time() if now is None else now) - t)} ago"


def format_clock(t: Optional[float], today: Optional[float] = None) -> str:
    """Local time of day, ``'14:03:22'``; ``'Mar 04 14:03'`` when ``t`` is not on the day of ``today``."""
    if t is None or not math.isfinite(t):
        return "—"
    lt = time.localtime(t)
    if today is not None and time.localtime(today)[:3] != lt[:3]:
        return time.strftime("%b %d %H:%M", lt)
    return time.strftime("%H:%M:%S", lt)


def format_date(t: Optional[float]) -> str:
    """``'2026-03-04 14:03'`` — for lists of runs, where runs span days."""
    if t is None or not math.isfinite(t):
        return "—"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def format_number(value: Optional[float], digits: int = 3) -> str:
    """Compact numbers for stat panes: ``12.3k``, ``4.56M``, ``0.0123``, ``2.0e-05``; ``—`` when unknown."""
    if value is None:
        return "—"
    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    a = abs(value)
    if a == 0:
        return "0"
    if a >= 1e9:
        return f"{value / 1e9:.{digits - 1}f}G"
    if a >= 1e6:
        return f"{value / 1e6:.{digits - 1}f}M"
    if a >= 1e4:
        return f"{value / 1e3:.{max(digits - 2, 0)}f}k"
    if a >= 1e-3:
        return f"{value:.{digits}g}" if a < 1000 else f"{value:.0f}"
    return f"{value:.1e}"
