"""Nothing on the dashboard is cut off at the sizes people use over SSH (80×24, 120×40, 200×50): the
footer, the chart legends, the empty panes' notes; the run/log column and the log's wrapping follow the
terminal's width."""
from __future__ import annotations

from rich.text import Text

from dashboard_helpers import DashApp, loaded, make_run, pilot_test, utc, wait_for  # noqa: F401 (utc: fixture)
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.dashboard.charts import SeriesChart
from zerotui.tui.dashboard.run_log import RunLog

STOPPED = {"status": {"state": "stopped", "heartbeat": 1.0}}


def _widest_log_line(screen) -> int:
    return max(len(line.text.rstrip()) for line in screen.query_one(RunLog).lines)


@pilot_test
async def test_legends_fit_their_borders_at_120x40(tmp_path):
    async with DashApp(make_run(tmp_path, "live.jsonl")).run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        for chart in screen.query(SeriesChart):
            legend = Text.from_markup(str(chart.border_subtitle)).cell_len
            assert 0 < legend <= chart.size.width - 6, f"{chart.id}: {chart.border_subtitle!r} is cut"
        # the smoothed loss and the eval loss stay in, in fewer words
        assert "1.428" in str(screen.query_one("#chart-loss").border_subtitle)
        assert "eval 1.574" in str(screen.query_one("#chart-loss").border_subtitle)


@pilot_test
async def test_empty_panes_say_their_note_whole(tmp_path):
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", **STOPPED)  # a CPU run, fp32
    async with DashApp(paths).run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        text = " ".join(screen.query_one("#chart-gpu-util").text.split())
        assert "no GPU telemetry (CPU run, or NVML unavailable)" in text


@pilot_test
async def test_the_scale_tab_of_a_fp32_run_says_why_it_is_empty(tmp_path):
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", **STOPPED)
    async with DashApp(paths).run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("2")
        scale = screen.query_one("#chart-scale")
        await wait_for(pilot, lambda: scale.region.area > 0 and not scale.dirty, what="the Scale pane")
        text = " ".join(scale.text.split())
        assert "loss scaling applies only to fp16" in text and "this run is fp32" in text


@pilot_test
async def test_run_column_and_log_follow_the_terminal_width(tmp_path):
    async with DashApp(make_run(tmp_path, "live.jsonl")).run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.query_one("#pane-log").outer_size.width == 46
        narrow = _widest_log_line(screen)
        await pilot.resize_terminal(200, 50)
        await wait_for(pilot, lambda: screen.query_one("#pane-log").outer_size.width > 46, what="a wider column")
        assert screen.query_one("#pane-log").outer_size.width == 56
        # the lines already written are wrapped again to the new width, not only the new ones
        await wait_for(pilot, lambda: _widest_log_line(screen) > narrow, what="the old lines rewrapped")
        assert "training started: 3000 steps, world size 1" in " ".join(
            line.text.strip() for line in screen.query_one(RunLog).lines)


@pilot_test
async def test_dashboard_footer_fits_and_keeps_help(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = ZeroTuiApp(attach=paths)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: type(app.screen).__name__ == "DashboardScreen", what="the dashboard")
        await pilot.pause(0.3)
        keys = list(app.screen.query("FooterKey"))
        assert max(k.region.right for k in keys) <= 120
        assert {"help", "runs", "detach"} <= {k.action for k in keys}
