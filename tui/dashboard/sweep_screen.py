"""The sweep screen (`zerotui sweep --watch`): every trial with its values, state and eval loss, the best
so far, and the objective per trial as a chart, refreshed every few seconds from the sweep's study. With
--parallel several trials run at once: each running row shows its latest eval loss and its GPU (or slot).

Reading the study opens its SQLite file, a few tenths of a second: done on a thread, never the UI's.
"""
from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual_plotext import PlotextPlot
from zerotui.core.sweep.report import progress, trial_cells
from zerotui.tui.common.table_fill import fill_table

REFRESH_S = 3.0
COLUMNS = ("trial", "state", "eval loss", "values", "run")


def headline(s: dict[str, Any]) -> str:
    line = f"sweep {s['sweep']}  ·  {s['state']}  ·  {progress(s)}"
    best = s.get("best")
    if best:
        line += f"  ·  best: t{best['number']}, eval loss {best['value']:.4g}"
    if s.get("overhead_s_median") is not None:
        line += f"  ·  overhead {s['overhead_s_median']:.0f} s/trial"
    return line


class SweepScreen(Screen):
    DEFAULT_CSS = """
    SweepScreen #sweep-head { height: 1; padding: 0 1; background: $boost; }
    SweepScreen DataTable { height: 1fr; }
    SweepScreen PlotextPlot { height: 2fr; border: round $primary; }
    """
    BINDINGS = [Binding("q", "leave", "Quit", tooltip="leave the screen; the sweep goes on"),
                Binding("escape", "leave", "Back", show=False),
                Binding("r", "refresh_now", "Refresh", tooltip="read the study again now")]

    def __init__(self, paths: Any, standalone: bool = True) -> None:
        super().__init__()
        self.paths = paths
        self.standalone = standalone   # `zerotui sweep --watch`: q quits; from the wizard: back to it
        self.summary: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Static("reading the sweep...", id="sweep-head")
        yield DataTable(zebra_stripes=True, cursor_type="row")
        yield PlotextPlot()
        yield Footer()

    def action_leave(self) -> None:
        if self.standalone:
            self.app.exit()
        else:
            self.app.pop_screen()

    def on_mount(self) -> None:
        self.action_refresh_now()
        self.set_interval(REFRESH_S, self.action_refresh_now)

    @work(thread=True, exclusive=True, exit_on_error=False, group="sweep", description="read the sweep")
    def action_refresh_now(self) -> None:
        from zerotui.core.sweep.report import summary

        s = summary(self.paths)
        self.app.call_from_thread(self.show, s)

    def show(self, s: dict[str, Any]) -> None:
        self.summary = s
        self.query_one("#sweep-head", Static).update(headline(s))
        fill_table(self.query_one(DataTable), COLUMNS, [trial_cells(t) for t in s["trials"]])
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.title("eval loss per trial (● complete, × pruned; line: best so far)")
        done = [t for t in s["trials"] if t.get("value") is not None]
        best, xs, ys = None, [], []
        for t in sorted((t for t in done if t["state"] == "complete"), key=lambda t: t["number"]):
            if best is not None and t["value"] < best:  # a step down where a trial beat the best
                xs.append(t["number"])
                ys.append(best)
            best = t["value"] if best is None else min(best, t["value"])
            xs.append(t["number"])
            ys.append(best)
        if xs:
            last = max(t["number"] for t in s["trials"])
            plt.plot(xs + [last], ys + [ys[-1]], marker="braille", label="best so far")
        for state, marker in (("complete", "●"), ("pruned", "×")):  # drawn last: on top of the line
            pts = [(t["number"], t["value"]) for t in done if t["state"] == state]
            if pts:
                plt.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=state)
        numbers = [t["number"] for t in s["trials"]]
        if numbers:
            step = max(1, len(numbers) // 10)
            plt.xticks(numbers[::step], [f"t{n}" for n in numbers[::step]])
        plt.xlabel("trial")
        plot.refresh()
