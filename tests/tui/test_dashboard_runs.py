"""The runs screen: live and past runs with state, step, loss, speed, start and duration; open any."""
from __future__ import annotations

import json
import os
import time

from textual.widgets import DataTable

from dashboard_helpers import last_t, make_run, pilot_test, text_of, utc, wait_for  # noqa: F401 (utc: fixture)
from zerotui.core.timefmt import format_number
from zerotui.tui.common.confirm import ConfirmScreen
from zerotui.tui.dashboard.screen import DashboardScreen
from zerotui.tui.dashboard.navigation import RunNavigation
from zerotui.tui.dashboard.runs import RunsScreen


class RunsApp(RunNavigation):
    def __init__(self, runs_dir, now: float) -> None:
        super().__init__()
        self.runs_dir, self.now = runs_dir, now

    def on_mount(self) -> None:
        self.push_screen(RunsScreen(self.runs_dir, clock=lambda: self.now, refresh_s=0.2))


def _runs(tmp_path):
    runs = tmp_path / "runs"
    # list_runs judges liveness by the real clock: the live run's worker (this test) beats now
    live = make_run(runs, "live.jsonl", name="20260101-000000-live",
                    status={"state": "running", "pid": os.getpid(), "heartbeat": time.time()})
    done = make_run(runs, "finished.jsonl", name="20260101-000001-done",
                    status={"state": "completed", "heartbeat": last_t(make_run(tmp_path / "x", "finished.jsonl"))})
    failed = make_run(runs, "failed.jsonl", name="20260101-000002-failed",
                      status={"state": "failed", "heartbeat": 1767226400.0})
    lost = make_run(runs, "live.jsonl", name="20260101-000003-lost", alive=False)
    return runs, live, done, failed, lost


@pilot_test
async def test_runs_screen_lists_every_run_with_its_facts(tmp_path):
    runs, live, done, failed, lost = _runs(tmp_path)
    app = RunsApp(runs, now=last_t(live) + 10)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.rows) == 4, what="four runs")
        table = screen.query_one(DataTable)
        rows = {r.name: r for r in screen.rows}
        assert [r.name for r in screen.rows] == sorted(rows, reverse=True)  # newest first
        assert rows["20260101-000000-live"].state == "running"
        assert rows["20260101-000001-done"].state == "completed"
        assert rows["20260101-000002-failed"].state == "failed"
        assert rows["20260101-000003-lost"].state == "lost"
        cells = {str(table.get_row(name)[0]): [str(c) for c in table.get_row(name)] for name in rows}
        live_row = cells["20260101-000000-live"]
        assert live_row[1] == "running" and live_row[2] == "600/3,000" and live_row[3] == "1.494"
        last_eval = [json.loads(line) for line in live.events.read_text().splitlines() if '"eval"' in line][-1]
        assert live_row[4] == format_number(last_eval["loss"], 4)  # the fixture's evals carry no perplexity
        assert live_row[5] == "16.9k" and live_row[6] == "2026-01-01 00:00" and live_row[7] == "1h 00m"
        done_row = cells["20260101-000001-done"]
        assert done_row[2] == "480/480" and done_row[7] == "40m 56s"
        lost_row = cells["20260101-000003-lost"]
        assert lost_row[1] == "lost" and lost_row[8] == "01:00:47 (10s ago)"
        # the failed run's reason shows under the table when it is selected
        table.move_cursor(row=[r.name for r in screen.rows].index("20260101-000002-failed"))
        await pilot.pause(0.1)
        assert "failed: CUDA out of memory" in text_of(screen.query_one("#runs-detail"))
        assert screen.check_action("resume", ()) is True


@pilot_test
async def test_open_a_finished_run_read_only_and_come_back(tmp_path):
    runs, live, done, failed, lost = _runs(tmp_path)
    app = RunsApp(runs, now=last_t(live) + 10)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.rows) == 4, what="four runs")
        screen.query_one(DataTable).move_cursor(row=[r.name for r in screen.rows].index("20260101-000001-done"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen), what="the dashboard")
        dash = app.screen
        assert dash.paths == done and dash.live is False
        await wait_for(pilot, lambda: dash.history is not None, what="history")
        await pilot.pause(0.2)
        assert "read-only" in text_of(dash.query_one("#dash-status"))
        assert dash.check_action("stop", ()) is False and dash.check_action("resume_run", ()) is False
        await pilot.press("r")  # the dashboard's own runs key opens the list again
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen), what="runs again")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen), what="back to the dashboard")


@pilot_test
async def test_resume_a_lost_run_asks_first(tmp_path):
    runs, live, done, failed, lost = _runs(tmp_path)
    app = RunsApp(runs, now=last_t(live) + 10)
    async with app.run_test(size=(160, 30)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.rows) == 4, what="four runs")
        screen.query_one(DataTable).move_cursor(row=[r.name for r in screen.rows].index("20260101-000003-lost"))
        await pilot.pause(0.1)
        assert "u resumes it" in text_of(screen.query_one("#runs-detail"))
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation")
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen), what="the list")
        screen.query_one(DataTable).move_cursor(row=[r.name for r in screen.rows].index("20260101-000000-live"))
        await pilot.pause(0.1)
        assert screen.check_action("resume", ()) is False  # a live run is not resumed


@pilot_test
async def test_empty_runs_folder_says_how_to_start(tmp_path):
    app = RunsApp(tmp_path / "none", now=0.0)
    async with app.run_test(size=(100, 20)) as pilot:
        await wait_for(pilot, lambda: "No runs yet" in text_of(app.screen.query_one("#runs-empty")),
                       what="the empty message")
