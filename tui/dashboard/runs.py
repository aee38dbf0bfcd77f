"""Every run in the runs folder, live ones and past ones; Enter opens one on the dashboard.

A thread worker lists the runs (``core.run.folder.list_runs``) and reads the head and tail of each events file
(``core.run.overview``) every two seconds, so a 100 MB events file never blocks the list. A run whose
worker died without a final state shows as ``lost`` with its last heartbeat, and can be resumed (u).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Optional

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import get_current_worker

from zerotui.core.run.overview import RunOverview, eval_figures, eval_scores, overview
from zerotui.core.paths import default_runs_dir
from zerotui.core.run.folder import list_runs
from zerotui.core.timefmt import format_clock, format_date, format_duration, format_number
from zerotui.tui.messages import OpenChat, OpenRun, RunResumeDone, RunsListed
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.common.confirm import ConfirmScreen
from zerotui.tui.common.footer import FitFooter
from zerotui.tui.common.table_fill import fill_table

COLUMNS = ("run", "state", "step", "loss", "eval", "tokens/s", "started", "duration", "last heartbeat")
STATE_STYLE = {"running": "green", "paused": "yellow", "stopping": "yellow", "starting": "cyan",
               "completed": "green", "stopped": "yellow", "failed": "red", "lost": "bold red"}
REFRESH_S = 2.0


class RunsScreen(Screen):
    DEFAULT_CSS = """
    RunsScreen { layout: vertical; }
    RunsScreen #runs-title { height: 1; padding: 0 1; background: $panel; }
    RunsScreen #runs-table { height: 1fr; }
    RunsScreen #runs-empty { padding: 1 2; color: $text-muted; }
    RunsScreen #runs-detail { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """
    HELP_TITLE = "The runs list"
    HELP_INTRO = "Every run in the runs folder, live and past, refreshed every two seconds."
    BINDINGS = [
        Binding("enter", "open", "Open", show=True, priority=False, tooltip="the dashboard of the run"),
        # One key, two bindings: a run that is over opens the chat; on a live one the key says why not
        # without taking room in the footer (full at 80 columns while live). Help lists the key once.
        Binding("m", "chat", "Chat", tooltip="talk to the run's model, final/ or a checkpoint (a finished run)"),
        Binding("m", "chat_refused", "Chat", show=False, tooltip="a live run: says why its model is not loaded"),
        Binding("u", "resume", "Resume", tooltip="a stopped, failed or lost run: continue from its last checkpoint"),
        Binding("escape", "back", "Back", tooltip="the screen before this one"),
        Binding("f5", "refresh", "Refresh", show=False, tooltip="read the runs folder again now"),
    ]

    def __init__(self, runs_dir: Optional[Path] = None, clock: Callable[[], float] = time.time,
                 refresh_s: float = REFRESH_S) -> None:
        super().__init__()
        self.runs_dir = Path(runs_dir) if runs_dir else default_runs_dir()
        self.clock = clock
        self.refresh_s = refresh_s
        self.rows: list[RunOverview] = []

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Runs", "bold"), ("  in ", "dim"), str(self.runs_dir)), id="runs-title")
        table: DataTable = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        fill_table(table, COLUMNS, [])
        yield table
        yield Static("reading the runs folder…", id="runs-empty")
        yield Static(id="runs-detail")
        yield FitFooter()

    def on_mount(self) -> None:
        self.list_runs()
        self.set_interval(self.refresh_s, self.list_runs, name="runs refresh")
        self.query_one(DataTable).focus()

    @work(thread=True, exclusive=True, exit_on_error=False, group="runs-list", description="list runs")
    def list_runs(self) -> None:
        worker = get_current_worker()
        rows = []
        try:
            for summary in list_runs(self.runs_dir):
                if worker.is_cancelled:
                    return
                rows.append(overview(summary))
        except OSError as err:
            self.post_message(RunsListed([], f"cannot read {self.runs_dir}: {err.strerror or err}"))
            return
        self.post_message(RunsListed(rows))

    def on_runs_listed(self, message: RunsListed) -> None:
        message.stop()
        table = self.query_one(DataTable)
        empty = self.query_one("#runs-empty", Static)
        if message.error:
            empty.update(Text(message.error, style="red"))
        elif not message.rows:
            empty.update(f"No runs yet in {self.runs_dir}. Start one from the wizard or with "
                         "`zerotui train PRESET`.")
        empty.display = bool(message.error or not message.rows)
        selected = self.selected.name if self.selected else None
        self.rows = message.rows
        now = self.clock()
        scroll_x = table.scroll_x  # refilled every 2 s: the columns scrolled to (80 wide: started...) stay
        fill_table(table, COLUMNS, [self._cells(row, now) for row in self.rows], keys=[r.name for r in self.rows])
        table.scroll_to(x=scroll_x, animate=False, immediate=True)
        if selected is not None and selected in [r.name for r in self.rows]:
            table.move_cursor(row=[r.name for r in self.rows].index(selected))
        self._show_detail()

    @staticmethod
    def _cells(row: RunOverview, now: float) -> list:
        step = "—" if row.step is None else f"{row.step:,}"
        if row.total_steps:
            step += f"/{row.total_steps:,}"
        beat = format_clock(row.heartbeat, now) if row.heartbeat else "—"
        if row.state == "lost" and row.heartbeat:
            beat += f" ({format_duration(now - row.heartbeat)} ago)"
        return [row.name, Text(row.state, style=STATE_STYLE.get(row.state, "")), step,
                format_number(row.loss, 4), RunsScreen._eval_cell(row), format_number(row.tokens_per_s),
                format_date(row.started),
                format_duration(row.duration_s(now)), beat]

    @staticmethod
    def _eval_cell(row: RunOverview) -> str:
        """The newest eval's loss, then its perplexity and ROUGE-L where it has them."""
        if row.eval is None:
            return "—"
        scores = eval_scores(row.eval)
        loss = format_number(eval_figures(row.eval)["eval_loss"], 4)
        return f"{loss} · {scores}" if scores else loss

    @property
    def selected(self) -> Optional[RunOverview]:
        table = self.query_one(DataTable)
        if not self.rows or table.cursor_row is None or not (0 <= table.cursor_row < len(self.rows)):
            return None
        return self.rows[table.cursor_row]

    @on(DataTable.RowHighlighted)
    def _show_detail(self) -> None:
        row = self.selected
        detail = self.query_one("#runs-detail", Static)
        if row is None:
            detail.update("")
        elif row.state == "lost":
            detail.update(Text("The worker is gone without a final state. u resumes it from its last "
                               "checkpoint; Enter shows its history.", style="yellow"))
        elif row.reason and not row.live:  # a resumed run's events still hold the stop it came back from
            detail.update(Text(f"{row.state}: {row.reason}", style="red" if row.state == "failed" else ""))
        else:
            detail.update("Enter opens the dashboard" + (" (live)." if row.live else " (read-only)."))
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> Optional[bool]:
        if action == "resume":
            row = self.selected
            return row is not None and row.state in ("lost", "stopped", "failed")
        if action == "open":
            return self.selected is not None
        if action in ("chat", "chat_refused"):
            row = self.selected
            return row is not None and row.live == (action == "chat_refused")
        return True

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        row = self.selected
        if row is None:
            return
        # A run that is over opens read-only; a live one with its control keys.
        self.post_message(OpenRun(row.paths, live=row.live or row.state == "lost"))

    def action_chat_refused(self) -> None:
        self.action_chat()

    def action_chat(self) -> None:
        row = self.selected
        if row is None:
            return
        from zerotui.core.infer.weights import chat_refusal

        why = chat_refusal(row.state, row.name)
        if why:
            self.notify(why, title="chat not opened", severity="warning", timeout=10, markup=False)
            return
        self.post_message(OpenChat(row.paths))

    def action_resume(self) -> None:
        row = self.selected
        if row is None or row.state not in ("lost", "stopped", "failed"):
            return

        def answer(yes: Optional[bool]) -> None:
            if yes:
                self.resume_worker(row)
        self.app.push_screen(ConfirmScreen(
            f"Resume {row.name}?", "A new worker continues from the run's newest complete checkpoint, "
            "appending to the same event stream.", yes="Resume"), answer)

    @work(thread=True, exclusive=True, exit_on_error=False, group="runs-resume", description="resume a run")
    def resume_worker(self, row: RunOverview) -> None:
        self.post_message(RunResumeDone.after_resume(row.paths))

    def on_run_resume_done(self, message: RunResumeDone) -> None:
        message.stop()
        if message.error:
            self.notify(in_tui_words(message.error), title="resume failed", severity="error", timeout=15, markup=False)
            return
        self.notify("a new worker continues the run", title="resumed")
        self.list_runs()

    def action_refresh(self) -> None:
        self.list_runs()

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        else:
            self.app.exit(0)
