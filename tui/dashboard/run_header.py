"""The dashboard's top lines: state and run name, the outcome / lost / paused banner, progress and ETA."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import ProgressBar, Static

from zerotui.core.events.history import RunHistory
from zerotui.core.run.folder import live_pids
from zerotui.core.run.settled import LIVE_STATES
from zerotui.core.timefmt import format_clock, format_duration

STATE_STYLE = {"running": "green", "paused": "yellow", "stopping": "yellow", "starting": "cyan",
               "completed": "green", "stopped": "yellow", "failed": "red", "lost": "red"}


@dataclass
class HeaderFacts:
    """What the header shows besides the history: the dashboard's own state."""

    name: str
    state: str                      # the outcome if finished, else status.json's state (incl. lost)
    live: bool                      # False: opened read-only
    zoom: str
    x_mode: str
    status: dict[str, Any] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)  # control commands sent, not yet acknowledged
    finished: Optional[dict] = None  # the run_finished that stands (None while a resumed worker starts)


def _elide(name: str, room: int) -> str:
    """``name`` in at most ``room`` cells, its middle replaced by … (a run's name starts with its date and
    ends with its own part: both ends say which run it is)."""
    if len(name) <= room:
        return name
    if room <= 1:
        return "…"[:max(room, 0)]
    head = (room - 1) // 2
    return name[:head] + "…" + name[len(name) - (room - 1 - head):]


def status_line(facts: HeaderFacts, width: int) -> Text:
    """The first line in ``width`` cells, fields by importance: the state and the run's name always (the
    name shortened in the middle last of all), then read-only, then the zoom, then the x axis; what does
    not fit is left out whole (the zoom and the axis also show on the charts; help names z and t)."""
    state = facts.state
    head = [(f"● {state}", f"bold {STATE_STYLE.get(state, '')}"), ("  ", "")]
    # read-only stays with the name: it says why no control key works, which the footer cannot.
    kept = [("  read-only", "dim")] if not facts.live else []
    optional = [[("   zoom ", "dim"), (facts.zoom, "")],
                [("   x ", "dim"), ("steps" if facts.x_mode == "step" else "time", "")]]

    def cells(parts: list[tuple[str, str]]) -> int:
        return sum(len(text) for text, _ in parts)
    while optional and cells(head) + len(facts.name) + cells(kept) + sum(cells(o) for o in optional) > width:
        optional.pop()
    room = width - cells(head) - cells(kept) - sum(cells(o) for o in optional)
    return Text.assemble(*head, _elide(facts.name, room), *kept, *[part for o in optional for part in o])


class RunHeader(Vertical):
    DEFAULT_CSS = """
    RunHeader { height: auto; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._last: dict[str, Text | str] = {}

    def compose(self) -> ComposeResult:
        yield Static(id="dash-status")
        yield Static(id="dash-banner")
        with Horizontal(id="dash-progress"):
            yield ProgressBar(total=None, show_eta=False, show_percentage=True, id="dash-bar")
            yield Static(id="dash-eta")

    def _set(self, selector: str, content: Text | str, layout: bool = False) -> None:
        """Update a line only when it changed (each update costs a repaint, with layout a re-layout)."""
        if self._last.get(selector) != content:
            self._last[selector] = content
            self.query_one(selector, Static).update(content, layout=layout)

    def show(self, h: Optional[RunHistory], facts: HeaderFacts, now: float) -> None:
        # The line's own cells (inside its padding); before the first layout, the terminal's less that.
        width = self.query_one("#dash-status").content_size.width or self.app.size.width - 2
        self._set("#dash-status", status_line(facts, width))
        self._banner(h, facts, now)
        # No bar until the total is known: an indeterminate bar animates, which says nothing here.
        self.query_one("#dash-progress").display = bool(h is not None and h.total_steps)
        eta_text = ""
        if h is not None and h.total_steps:
            self.query_one(ProgressBar).update(total=h.total_steps, progress=h.current_step or 0)
            # only while a worker trains: a lost run's last rate promises an end that will not come
            eta = h.eta_s() if facts.state in LIVE_STATES else None
            eta_text = f"step {h.current_step or 0:,}/{h.total_steps:,}"
            if eta is not None and facts.state == "paused":  # no end time: it moved on with the clock
                eta_text += f"  {format_duration(eta)} to go once resumed"
            elif eta is not None:
                eta_text += f"  ETA {format_duration(eta)} ({format_clock(now + eta, now)})"
            elif facts.finished:
                eta_text += f"  ran {format_duration(h.elapsed_s(now))}"
        self._set("#dash-eta", eta_text)

    def _banner(self, h: Optional[RunHistory], facts: HeaderFacts, now: float) -> None:
        banner = self.query_one("#dash-banner", Static)
        state = facts.state
        text, style = "", ""
        if facts.finished:
            reason = facts.finished.get("reason") or ""
            text = f"Run {state}" + (f": {reason}" if reason else "")
            style = {"completed": "-ok", "failed": "-error"}.get(state, "-warn")
        elif state == "lost":
            beat = facts.status.get("heartbeat")
            known = isinstance(beat, (int, float))
            when = format_clock(beat, now) if known else "never"
            ago = f" ({format_duration(now - beat)} ago)" if known else ""
            alive = live_pids(facts.status)
            if alive:  # silent, not gone: resuming beside it is refused (core/run/start.py)
                text = (f"Silent: no heartbeat since {when}{ago}, but process {alive[0]} of the run is still "
                        f"running. Wait, or end it (kill {alive[0]}) before resuming.")
            else:
                text = (f"Lost: the worker stopped without a final state. Last heartbeat {when}{ago}. "
                        "Press u to resume from the last checkpoint.")
            style = "-error"
        elif state == "paused":
            text, style = "Paused: press p to resume.", "-warn"
        if facts.pending:
            waiting = ", ".join(sorted(set(facts.pending)))
            text = (text + "  " if text else "") + f"Sent {waiting}; waiting for the worker to acknowledge."
            style = style or "-warn"
        self._set("#dash-banner", text, layout=True)  # its height follows the text
        banner.set_classes(style)
        banner.display = bool(text)
