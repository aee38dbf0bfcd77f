"""The scrolling log of the run: alerts, the worker's messages, checkpoints, phases, control acks."""
from __future__ import annotations

from collections import deque
from typing import Iterable, Optional

from rich.text import Text
from textual.events import Resize
from textual.widgets import RichLog

from zerotui.core.events.history import LOG_CAPACITY, LogEntry
from zerotui.core.timefmt import format_clock

_STYLE = {"information": "", "warning": "bold yellow", "error": "bold red"}
_MARK = {"information": " ", "warning": "!", "error": "✗"}


class RunLog(RichLog):
    """Newest at the bottom, bounded like the history's own log (older lines drop off the top).

    RichLog wraps a line once, when it is written; this one keeps its lines and wraps them all again
    when its width changes, so a terminal made wider (or the dashboard's column) is used by the old
    lines too, not only by the new ones."""

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
        self._texts: deque[Text] = deque(maxlen=LOG_CAPACITY)
        self._wrapped_at: Optional[int] = None

    def add(self, entries: Iterable[LogEntry]) -> None:
        for entry in entries:
            line = Text(f"{format_clock(entry.t)} {_MARK.get(entry.severity, ' ')} ", style="dim")
            line.append(entry.text, style=_STYLE.get(entry.severity, ""))
            self._texts.append(line)
            self.write(line)

    def clear(self) -> "RunLog":
        self._texts.clear()
        return super().clear()

    def on_resize(self, event: Resize) -> None:
        # (RichLog's own on_resize runs too: Textual calls the handler of every class in the MRO.)
        width = self.scrollable_content_region.width
        if self._wrapped_at is not None and width != self._wrapped_at and self._texts:
            at_end = self.is_vertical_scroll_end
            texts = list(self._texts)
            super().clear()
            for line in texts:
                self.write(line, scroll_end=at_end)
        self._wrapped_at = width

    def note(self, t: float, text: str, severity: str = "information") -> None:
        """A line from the dashboard itself (a control command sent, a read finished)."""
        self.add([LogEntry(t, severity, text, "ui")])
