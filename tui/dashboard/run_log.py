"""The scrolling log of the run: alerts, the worker's messages, checkpoints, phases, control acks."""
from __future__ import annotations

from typing import Iterable

from rich.text import Text
from textual.widgets import RichLog

from zerotui.core.events.history import LOG_CAPACITY, LogEntry
from zerotui.core.timefmt import format_clock

_STYLE = {"information": "", "warning": "bold yellow", "error": "bold red"}
_MARK = {"information": " ", "warning": "!", "error": "✗"}


class RunLog(RichLog):
    """Newest at the bottom, bounded like the history's own log (older lines drop off the top)."""

    DEFAULT_CSS = """
    RunLog {
        height: 1fr;
        min-height: 3;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, **kwargs) -> None:
        # min_width: RichLog renders at least 78 columns wide by default, which crops lines in a narrow pane.
        super().__init__(max_lines=LOG_CAPACITY, wrap=True, markup=False, auto_scroll=True, min_width=20,
                         **kwargs)
        self.border_title = "log"

    def add(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            line = Text(f"{format_clock(entry.t)} {_MARK.get(entry.severity, ' ')} ", style="dim")
            line.append(entry.text, style=_STYLE.get(entry.severity, ""))
            self.write(line)

    def note(self, t: float, text: str, severity: str = "information") -> None:
        """A line from the dashboard itself (a control command sent, a read finished)."""
        self.add([LogEntry(t, severity, text, "ui")])
