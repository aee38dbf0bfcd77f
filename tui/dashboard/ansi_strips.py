"""plotext's ANSI text straight to Textual ``Strip``s, without ``rich.Text.from_ansi``.

A chart is rebuilt every few ticks, and ``Text.from_ansi`` followed by Textual's own rendering of that
Text took ~15 ms of a ~20 ms chart redraw (53×14, two lines of 200 points, measured here) — more than
plotext itself. plotext writes only SGR colour codes (``ESC[...m``) and plain characters, one line per
row, so a small decoder with a style cache does the same work in a fraction of the time, and the chart
hands Textual finished lines (``render_line``) that cost nothing to repaint.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

_SGR = re.compile(r"\x1b\[([0-9;]*)m")
_BASIC = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")


@lru_cache(maxsize=4096)
def _style(fg: Optional[str], bg: Optional[str], bold: bool) -> Style:
    return Style(color=Color.parse(fg) if fg else None, bgcolor=Color.parse(bg) if bg else None,
                 bold=bold or None)


def _colour(params: list[int], i: int) -> tuple[Optional[str], int]:
    """The colour that starts at params[i] (after 38/48), and the index after it."""
    if i < len(params) and params[i] == 5 and i + 1 < len(params):
        return f"color({params[i + 1]})", i + 2
    if i < len(params) and params[i] == 2 and i + 3 < len(params):
        r, g, b = params[i + 1:i + 4]
        return f"rgb({r},{g},{b})", i + 4
    return None, len(params)


def ansi_to_strips(text: str, width: int) -> list[Strip]:
    """One Strip per line of ``text``, each exactly ``width`` cells."""
    strips = []
    fg: Optional[str] = None
    bg: Optional[str] = None
    bold = False
    for line in text.split("\n"):
        segments: list[Segment] = []
        pos = 0
        for match in _SGR.finditer(line):
            if match.start() > pos:
                segments.append(Segment(line[pos:match.start()], _style(fg, bg, bold)))
            pos = match.end()
            params = [int(p) if p else 0 for p in match.group(1).split(";")]
            i = 0
            while i < len(params):
                p = params[i]
                if p == 0:
                    fg, bg, bold = None, None, False
                elif p == 1:
                    bold = True
                elif p == 22:
                    bold = False
                elif p in (38, 48):
                    colour, i = _colour(params, i + 1)
                    if p == 38:
                        fg = colour
                    else:
                        bg = colour
                    continue
                elif p == 39:
                    fg = None
                elif p == 49:
                    bg = None
                elif 30 <= p <= 37:
                    fg = _BASIC[p - 30]
                elif 40 <= p <= 47:
                    bg = _BASIC[p - 40]
                elif 90 <= p <= 97:
                    fg = f"bright_{_BASIC[p - 90]}"
                elif 100 <= p <= 107:
                    bg = f"bright_{_BASIC[p - 100]}"
                i += 1
        if pos < len(line):
            segments.append(Segment(line[pos:], _style(fg, bg, bold)))
        strips.append(Strip(Segment.simplify(segments)).adjust_cell_length(width))
    return strips
