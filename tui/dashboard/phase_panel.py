"""Start-up, shown instead of empty charts: the worker's phases (importing, loading the model,
tokenising, initialising DeepSpeed...), each with its duration, the current one with its progress and
the time spent in it. DeepSpeed's initialise alone took 20-160 s on the H200 here: a silent
screen for that long looks like a hang."""
from __future__ import annotations

from typing import Optional

from rich.console import Group
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from zerotui.core.events.history import RunHistory
from zerotui.core.timefmt import format_duration


class PhasePanel(Static):
    DEFAULT_CSS = """
    PhasePanel {
        height: 1fr;
        padding: 1 2;
    }
    """

    _key: Optional[tuple] = None

    def show(self, history: Optional[RunHistory], now: float, state: str, finished: Optional[dict] = None) -> None:
        """Redrawn only while it is shown (start-up) and something in it changed."""
        if history is not None and history.step is not None and self._key is not None and not self.display:
            return
        phases = tuple((p.name, p.done, p.total, p.last_t) for p in history.phases.values()) if history else ()
        key = (phases, int(now), state, history.phase if history else None, bool(finished))
        if key == self._key:
            return
        self._key = key
        self.update(self.render_phases(history, now, state, finished), layout=False)

    @staticmethod
    def render_phases(history: Optional[RunHistory], now: float, state: str,
                      finished: Optional[dict] = None) -> Group | Text:
        """``finished``: the run_finished that stands (the dashboard's word: a resumed worker may be
        starting before its first event)."""
        if history is None or not history.phases:
            waiting = "waiting for the worker's first event" if state in ("starting", "running") else \
                f"no events: the run is {state}"
            return Text(waiting, style="dim")
        phases = list(history.phases.values())
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True)
        table.add_column(no_wrap=True, justify="right")
        table.add_column(no_wrap=True)
        for i, ph in enumerate(phases):
            current = i == len(phases) - 1 and history.phase == ph.name and not finished
            end = now if current else (phases[i + 1].first_t if i + 1 < len(phases) else ph.last_t)
            took = format_duration(max(0.0, end - ph.first_t))
            progress = ""
            bar: ProgressBar | Text = Text("")
            if ph.total:
                done = ph.done or 0.0
                progress = f"{done:,.0f}/{ph.total:,.0f}"
                if current:
                    bar = ProgressBar(total=ph.total, completed=done, width=24)
            elif current and ph.done is not None:
                progress = f"{ph.done:,.0f}"
            mark = Text("▶ ", style="bold cyan") if current else Text("✓ ", style="green")
            table.add_row(mark + Text(ph.name, style="bold" if current else ""), progress, took, bar)
        # The same clock as the numbers beside this panel (RunHistory.startup_s): two would disagree.
        head = Text(f"Starting up — {format_duration(history.startup_s(now) or 0.0)}", style="bold")
        return Group(head, Text(""), table)
