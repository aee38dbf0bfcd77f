"""The base of every dashboard chart: a plotext figure drawn from downsampled series, on demand.

A chart owns its data (a ``RunHistory`` handed over by the dashboard) and redraws only
when the dashboard's timer asks (``redraw``), never per event. It queries each series for about one
bucket per column and draws the bucket's min and max, so a 300,000-step run costs the same to draw as a
300-step one (plotext rebuilds the whole figure each time: ~7-12 ms at 53×20 with a few hundred points,
measured with ``benchmarks/dashboard/long_run.py``).

The built figure is cached as Textual lines (``render_line``): Textual repaints a widget for many reasons
(a neighbour resized, the screen was uncovered) and none of them should rebuild the plot unless its size
changed.

Subclasses implement ``draw(ctx)`` with the ``band``, ``line``, ``markers`` and ``hline`` helpers.
"""
from __future__ import annotations

import math
import textwrap
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual_plotext import PlotextPlot

from zerotui.core.events.history import RunHistory
from zerotui.core.events.series import View
from zerotui.core.timefmt import format_number

from zerotui.tui.dashboard.ansi_strips import ansi_to_strips

#: Zoom choices, cycled by the dashboard's z key: label and window in seconds (None: the whole run).
ZOOMS: tuple[tuple[str, Optional[float]], ...] = (("all", None), ("last hour", 3600.0), ("last 10 min", 600.0))
#: Columns taken by the y-axis labels and frame; the rest get one bucket each.
_Y_LABEL_COLUMNS = 9

_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
               86400, 172800, 604800)


@dataclass
class DrawContext:
    """What one redraw draws: the history, the window, the x axis mode and the number of buckets."""

    history: RunHistory
    points: int
    window_s: Optional[float]
    end_t: Optional[float]
    x_mode: str            # "time" | "step"
    log_y: bool


def nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """Round values (1, 2, 2.5 or 5 × 10^k apart) inside [lo, hi]: the finest such spacing that gives
    at most ``count + 1`` of them (and at least one)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        return [lo]
    count = max(count, 1)
    mag = 10 ** math.floor(math.log10((hi - lo) / count))
    for step in (m * mag for m in (0.5, 1, 2, 2.5, 5, 10, 20)):
        first = math.ceil(lo / step) * step
        n = int((hi - first) / step + 1e-9) + 1
        if n <= count + 1:
            return [round(first + i * step, 12) for i in range(max(n, 1))]
    return [lo, hi]  # pragma: no cover - the 20 × mag spacing always fits


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of 10 (or of 2 when the range is narrow, as loss scales are) inside [lo, hi]."""
    if lo <= 0 or not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        return []
    base = 10 if hi / lo >= 100 else 2
    k0, k1 = math.floor(math.log(lo, base)), math.ceil(math.log(hi, base))
    ticks = [float(base ** k) for k in range(k0, k1 + 1) if lo <= base ** k <= hi]
    while len(ticks) > 6:
        ticks = ticks[::2]
    return ticks or [lo]


def time_ticks(t0: float, t1: float, count: int = 4) -> tuple[list[float], list[str]]:
    """Clock-time ticks on round local times between t0 and t1, labelled HH:MM (or ``d+1 HH:MM``)."""
    span = max(t1 - t0, 1.0)
    step = next((s for s in _TIME_STEPS if span / s <= count), _TIME_STEPS[-1])
    offset = time.localtime(t0).tm_gmtoff  # round in local time, so ticks fall on :00, :15, ...
    first = math.ceil((t0 + offset) / step) * step - offset
    ticks = [first + i * step for i in range(int((t1 - first) // step) + 1)]
    day0 = time.localtime(t0)[:3]
    labels = []
    for t in ticks:
        lt = time.localtime(t)
        fmt = "%H:%M:%S" if step < 60 else "%H:%M"
        prefix = "" if lt[:3] == day0 else time.strftime("%a ", lt)
        labels.append(prefix + time.strftime(fmt, lt))
    return ticks, labels


class SeriesChart(PlotextPlot):
    """A plotext chart fed from ``RunHistory`` series; see the module docstring."""

    DEFAULT_CSS = """
    SeriesChart {
        width: 1fr;
        height: 1fr;
        min-height: 6;
    }
    """

    #: The chart's name in its border (subclasses set it).
    TITLE = ""
    #: Shown instead of empty axes while the series have no points.
    EMPTY = "waiting for data"

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.history: Optional[RunHistory] = None
        self.window_s: Optional[float] = None
        self.end_t: Optional[float] = None
        self.x_mode = "time"
        self.log_y = False
        self.dirty = True
        self.build_ms = 0.0                 # the last build, for the benchmark and the log
        self.reference: Optional[float] = None  # a horizontal reference line (the memory estimate)
        self._strips: Optional[list[Strip]] = None
        self._built_for: Optional[tuple[int, int]] = None
        self._has_data = False
        self.border_title = self.TITLE

    # -- what the dashboard sets ------------------------------------------------------------------
    def set_history(self, history: Optional[RunHistory]) -> None:
        self.history = history
        self.dirty = True

    def configure(self, window_s: Optional[float], x_mode: str, end_t: Optional[float] = None) -> None:
        if (window_s, x_mode, end_t) != (self.window_s, self.x_mode, self.end_t):
            self.window_s, self.x_mode, self.end_t = window_s, x_mode, end_t
            self.dirty = True

    def redraw(self) -> float:
        """Rebuild the figure now if it is stale and visible; returns the milliseconds it took."""
        if not self.dirty or not self.is_mounted or not self._shown():
            return 0.0
        self._build()
        self.refresh()
        return self.build_ms

    def _shown(self) -> bool:
        """Displayed, and so are its containers: a hidden pane (a narrow terminal shows one) is not
        drawn until it is shown; it stays dirty meanwhile."""
        node = self
        while node is not None and node is not self.screen:
            if not getattr(node, "display", True):
                return False
            node = node.parent
        return True

    # -- drawing ----------------------------------------------------------------------------------
    def has_data(self, history: RunHistory) -> bool:
        """Subclasses: whether there is anything to draw (else the EMPTY text is shown)."""
        return True

    # Each chart draws its own series: ``draw(ctx)`` is required of every subclass, checked when the
    # subclass is made (below), so a chart without one fails at import rather than on first paint.
    draw: Callable[[DrawContext], None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not callable(getattr(cls, "draw", None)):
            raise TypeError(f"{cls.__name__} must define draw(ctx)")

    def _build(self) -> None:
        start = time.perf_counter()
        w, h = self.content_size.width, self.content_size.height
        self._built_for = (w, h)
        self.dirty = False
        history = self.history
        if w < 12 or h < 4 or history is None or not self.has_data(history):
            self._strips = self._message(self.empty_text(history) if history is not None else "reading the run…",
                                         w, h)
            self.build_ms = (time.perf_counter() - start) * 1000
            return
        plt = self.plt
        plt.clear_figure()
        plt.plotsize(w, h)
        plt._set_size(w, h)  # textual-plotext does the same: plotsize alone does not resize reliably
        plt.theme(self._get_plotext_theme_name(self.app.theme))
        ctx = DrawContext(history, max(8, w - _Y_LABEL_COLUMNS), self.window_s, self.end_t, self.x_mode,
                          self.log_y)
        self._xs: list[float] = []
        self._ys: dict[str, list[float]] = {"left": [], "right": []}
        self._refs: list[tuple[float, str, Optional[str]]] = []
        self.draw(ctx)
        self._axes(ctx)
        self._strips = ansi_to_strips(plt.build(), w)
        self.build_ms = (time.perf_counter() - start) * 1000

    def empty_text(self, history: RunHistory) -> str:
        """What the pane says while there is nothing to draw (subclasses may say why)."""
        return self.EMPTY

    def _message(self, text: str, w: int, h: int) -> list[Strip]:
        """``text`` wrapped to the pane and centred in it: cut at the edge, "no GPU telemetry (CPU run, or
        NVML" read as if NVML were the run."""
        style = self.visual_style.rich_style + Style(dim=True)
        blank = Strip.blank(w, self.visual_style.rich_style)
        lines = textwrap.wrap(text, max(1, w - 2)) or [""]
        top = max(0, (h - len(lines)) // 2)
        out = [blank] * h
        for i, line in enumerate(lines[:h]):
            out[min(h - 1, top + i)] = Strip([Segment(line.center(w)[:w], style)])
        return out

    def fit_subtitle(self, *variants: str) -> None:
        """The first legend (Textual markup) that fits in the bottom border, most detailed first; the last
        one whatever its length. Textual would cut a long one short ("━ eval …"), hiding which colour is
        which number."""
        room = self.size.width - 6  # the corners, a dash and a space either side
        chosen = variants[-1]
        for text in variants:
            if Text.from_markup(text).cell_len <= room:
                chosen = text
                break
        self.border_subtitle = chosen

    def render_line(self, y: int) -> Strip:
        """Lines of the cached figure (Textual's line API): a repaint costs no rebuild."""
        size = (self.content_size.width, self.content_size.height)
        if self._strips is None or self._built_for != size:
            self._build()
        assert self._strips is not None
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(size[0], self.visual_style.rich_style)

    @property
    def text(self) -> str:
        """The figure as plain text (what tests and the log read)."""
        return "\n".join(strip.text for strip in self._strips or [])

    def on_resize(self) -> None:
        self.dirty = True

    # -- helpers for subclasses -------------------------------------------------------------------
    def view(self, ctx: DrawContext, name: str) -> View:
        series = ctx.history.series.get(name)
        if series is None:
            from zerotui.core.events.series import _empty_view

            return _empty_view()
        return series.view(ctx.points, ctx.window_s, self._end(ctx))

    def _end(self, ctx: DrawContext) -> Optional[float]:
        # Every chart of one dashboard ends its window at the same instant (the newest event), so the
        # panes line up in time even when telemetry and steps arrive at different moments.
        return ctx.end_t if ctx.end_t is not None else ctx.history.last_t

    def x_of(self, ctx: DrawContext, view: View) -> np.ndarray:
        return view.step if ctx.x_mode == "step" else view.t

    def _keep(self, x: np.ndarray, y: np.ndarray, log_y: bool,
              yside: Optional[str] = None) -> tuple[list[float], list[float]]:
        ok = np.isfinite(x) & np.isfinite(y)
        if log_y:
            ok &= y > 0
        xs, ys = x[ok].tolist(), y[ok].tolist()
        if xs:
            self._xs.extend((xs[0], xs[-1]))
            self._ys[yside or "left"].extend((min(ys), max(ys)))
        return xs, ys

    def band(self, ctx: DrawContext, view: View, color: str, yside: Optional[str] = None,
             scale: float = 1.0, log_y: Optional[bool] = None) -> None:
        """Each bucket's min then max at the same x: the spread of the raw values, two points a column."""
        x = self.x_of(ctx, view)
        xx = np.repeat(x, 2)
        yy = np.column_stack((view.lo, view.hi)).ravel() * scale
        xs, ys = self._keep(xx, yy, ctx.log_y if log_y is None else log_y, yside)
        if xs:
            self.plt.plot(xs, ys, marker="braille", color=color, yside=yside)

    def line(self, ctx: DrawContext, view: View, color: str, yside: Optional[str] = None,
             field: str = "last", scale: float = 1.0, log_y: Optional[bool] = None) -> None:
        x = self.x_of(ctx, view)
        y = getattr(view, field) * scale
        xs, ys = self._keep(x, y, ctx.log_y if log_y is None else log_y, yside)
        if xs:
            self.plt.plot(xs, ys, marker="braille", color=color, yside=yside)

    def markers(self, ctx: DrawContext, x: np.ndarray, y: np.ndarray, color: str, marker: str,
                log_y: Optional[bool] = None) -> None:
        xs, ys = self._keep(np.asarray(x, float), np.asarray(y, float), ctx.log_y if log_y is None else log_y)
        if xs:
            self.plt.scatter(xs, ys, marker=marker, color=color)

    def hline(self, value: Optional[float], color: str, yside: Optional[str] = None) -> None:
        """A reference line across the chart (drawn once the x range is known: plotext's own hline
        ignores ``yside='right'`` in 5.3)."""
        if value is not None and math.isfinite(value):
            self._ys[yside or "left"].append(value)
            self._refs.append((value, color, yside))

    def _axes(self, ctx: DrawContext) -> None:
        """Round ticks with short labels (plotext's own would read '524288.0' and raw unix times)."""
        plt = self.plt
        if self._xs:
            x0, x1 = min(self._xs), max(self._xs)
            for value, color, yside in self._refs:
                plt.plot([x0, x1], [value, value], marker="braille", color=color, yside=yside)
            if ctx.x_mode == "time":
                ticks, labels = time_ticks(x0, x1, count=max(2, ctx.points // 14))
            else:
                ticks = nice_ticks(x0, x1, count=max(2, ctx.points // 12))
                labels = [format_number(v) for v in ticks]
            plt.xticks(ticks, labels)
        rows = max(1, self.content_size.height // 4)
        for side, ys in self._ys.items():
            if not ys:
                continue
            y0, y1 = min(ys), max(ys)
            log = ctx.log_y if side == "left" else False
            if log:
                plt.yscale("log", yside=side)
                ticks = log_ticks(y0, y1)
            else:
                if y0 == y1:  # a flat line: give it room so it sits mid-pane and plotext has a range
                    y0, y1 = y0 - (abs(y0) * 0.1 or 1.0), y1 + (abs(y1) * 0.1 or 1.0)
                # Set the range explicitly: plotext ranges over the plotted points only, so a reference
                # line (RAM total, the estimate) or a tick outside them would be dropped.
                pad = (y1 - y0) * 0.04
                plt.ylim(y0 - pad, y1 + pad, yside=side)
                ticks = nice_ticks(y0, y1, count=min(4, rows))
            plt.yticks(ticks, [format_number(v) for v in ticks], yside=side)

#: plotext colour names -> Textual colours for the legends in the border subtitles.
_LEGEND_COLORS = {"gray": "#8a8a8a", "orange": "#ff8700", "cyan": "#00afaf", "green": "#00af00",
                  "red": "#d70000", "yellow": "#d7d700", "magenta": "#d700d7", "blue": "#0087ff",
                  "white": "#e4e4e4"}  # the xterm-256 colours plotext's names map to


def legend(*items: tuple[str, str]) -> str:
    """'━ raw ━ smoothed' in the lines' colours, as Textual markup (plotext's own legend box would sit on
    top of the data in a small pane)."""
    return " ".join(f"[{_LEGEND_COLORS.get(color, color)}]━[/] {label.replace('[', chr(92) + '[')}"
                    for color, label in items)
