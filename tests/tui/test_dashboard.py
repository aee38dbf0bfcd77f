"""Pilot tests of the dashboard on recorded event files: live appends, outcomes, lost runs, control."""
from __future__ import annotations

from dashboard_helpers import (DashApp, control_lines, last_t, loaded, log_text, make_run, pilot_test,
                               text_of, utc, wait_for)  # noqa: F401 (utc: fixture)
from zerotui.core.events.stream import EventWriter
from zerotui.tui.common.confirm import ConfirmScreen
from zerotui.tui.dashboard.charts import ZOOMS
from zerotui.tui.dashboard.loss_chart import LossChart

WIDE = (160, 48)
NARROW = (80, 24)


def _step(t: float, step: int, loss: float) -> dict:
    return dict(step=step, epoch=step / 500, loss=loss, lr=1e-4, grad_norm=0.7, loss_scale=4096.0, skipped=0,
                samples_per_s=31.0, tokens_per_s=16000.0, tflops=100.0, step_time=6.0)


@pilot_test
async def test_live_run_appended_while_open_updates_charts_and_stats(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        assert screen.history.current_step == 600
        assert "600 / 3,000" in text_of(screen.query_one("#pane-stats"))
        chart = screen.query_one(LossChart)
        before = chart.text
        t = last_t(paths)
        with EventWriter(paths.events) as w:
            for i in range(1, 31):
                w.write({"v": 1, "t": t + 6 * i, "type": "step", **_step(t + 6 * i, 600 + i, 9.0)})
            w.emit("telemetry", gpus=[{"index": 0, "util": 12, "mem_used": 5 * 1024 ** 3,
                                       "mem_total": 24 * 1024 ** 3}],
                   cpu_percent=5.0, ram_used=1, ram_total=2, rss=1)
        await wait_for(pilot, lambda: screen.history.current_step == 630, what="step 630")
        await wait_for(pilot, lambda: not chart.dirty, what="the loss chart to redraw")
        assert "630 / 3,000" in text_of(screen.query_one("#pane-stats"))
        assert chart.text != before
        assert screen.history.series["loss"].latest == 9.0
        # the loss spike reaches the top of the y axis: a tick label near 9 appears
        assert "8" in chart.text or "9" in chart.text
        assert screen.history.gpu_latest[0]["util"] == 12


@pilot_test
async def test_finished_run_shows_outcome_and_is_read_only(tmp_path):
    paths = make_run(tmp_path, "finished.jsonl", status={"state": "completed", "heartbeat": 1.0})
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        banner = text_of(screen.query_one("#dash-banner"))
        assert "Run completed: reached the last step" in banner
        assert screen.outcome == "completed"
        for action in ("pause_resume", "checkpoint", "stop", "stop_now"):
            assert screen.check_action(action, ()) is False
        await pilot.press("s", "x", "p", "c")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, ConfirmScreen)
        assert control_lines(paths) == []
        assert screen.has_class("-no-scale")  # bf16: no loss-scale pane
        assert not screen.query_one("#chart-scale").display or screen.has_class("-no-scale")


@pilot_test
async def test_failed_run_shows_its_reason(tmp_path):
    paths = make_run(tmp_path, "failed.jsonl", status={"state": "failed", "heartbeat": 1.0})
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        banner = text_of(screen.query_one("#dash-banner"))
        assert "Run failed: CUDA out of memory during step 120" in banner
        assert "read-only" in text_of(screen.query_one("#dash-status"))  # nothing left to control
        assert screen.query_one("#dash-banner").has_class("-error")
        log = log_text(screen)
        assert "oom:" in log and "micro-batch 2 with grad-accum 4" in log
        assert screen.check_action("resume_run", ()) is True


@pilot_test
async def test_lost_run_shows_last_heartbeat_and_offers_resume(tmp_path):
    paths = make_run(tmp_path, "live.jsonl", alive=False)
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: screen.state == "lost", what="the lost state")
        await pilot.pause(0.1)
        banner = text_of(screen.query_one("#dash-banner"))
        assert "Lost" in banner and "Last heartbeat 01:00:47 (10s ago)" in banner
        # No ETA for a run whose worker is gone: the last rate promised an end that would not come.
        assert "ETA" not in text_of(screen.query_one("#dash-eta")) and "step " in text_of(screen.query_one("#dash-eta"))
        (eta_row,) = [line for line in text_of(screen.query_one("#pane-stats")).splitlines()
                      if line.strip().startswith("ETA")]
        assert "—" in eta_row, eta_row
        assert screen.check_action("stop", ()) is False
        assert screen.check_action("resume_run", ()) is True
        paths.plan.unlink()  # resume_run refuses a folder without its plan: the error must be shown
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: any("no plan.yaml" in str(n.message) for n in app._notifications),
                       what="the resume error")


@pilot_test
async def test_a_silent_run_whose_process_lives_says_so_and_is_not_resumed(tmp_path, monkeypatch):
    import subprocess
    import sys
    import time

    from zerotui.core.run import folder

    monkeypatch.setattr(folder, "LOST_AFTER_S", 0.5)  # silent for "30 s" without waiting them out
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.1)
        beat = time.time()  # after the process started: it is the run's own, not a reused number
        paths = make_run(tmp_path, "live.jsonl", status={"state": "running", "pid": sleeper.pid,
                                                         "pids": [sleeper.pid], "heartbeat": beat, "step": 1})
        app = DashApp(paths, clock=time.time)
        async with app.run_test(size=WIDE) as pilot:
            screen = await loaded(pilot)
            await wait_for(pilot, lambda: screen.state == "lost", what="the silent state")
            await pilot.pause(0.1)
            banner = text_of(screen.query_one("#dash-banner"))
            assert "Silent" in banner and f"process {sleeper.pid}" in banner and "Press u" not in banner
            await pilot.press("u")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: any(f"kill {sleeper.pid}" in str(n.message) for n in app._notifications),
                           what="the refusal")
        assert sleeper.poll() is None and not paths.log.exists()  # nothing was started beside it
    finally:
        sleeper.kill()
        sleeper.wait()


@pilot_test
async def test_control_keys_write_control_jsonl_and_show_the_ack(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: screen.state == "running", what="running")
        await pilot.press("p")
        await pilot.press("c")
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="stop-now confirmation")
        await pilot.press("n")  # cancelled: nothing sent
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="stop confirmation")
        await pilot.press("y")
        # the stop is written once the confirmation closes: wait for it, not a fixed pause (a loaded
        # 2-core machine once read the file before it)
        await wait_for(pilot, lambda: len(control_lines(paths)) >= 3, what="three control lines")
        sent = control_lines(paths)
        assert [c["command"] for c in sent] == ["pause", "checkpoint", "stop"]
        assert all(c["by"] == "dashboard" and c["id"] for c in sent)
        assert "waiting for the worker" in text_of(screen.query_one("#dash-banner"))
        # every notification as it is raised: a shown one expires after its timeout, which a loaded 2-core
        # machine once passed before the check below (CI rehearsal, 2026-12-04)
        notified: list[str] = []
        raise_notice = app.notify

        def recording_notify(message, *args, **kwargs):
            notified.append(str(message))
            return raise_notice(message, *args, **kwargs)

        app.notify = recording_notify
        with EventWriter(paths.events) as w:  # the worker's answers
            for c in sent:
                w.emit("control_ack", command=c["command"], id=c["id"], ok=True, message=f"{c['command']} done")
        await wait_for(pilot, lambda: not screen.pending, what="the acks")
        log = log_text(screen)
        for command in ("pause", "checkpoint", "stop"):
            assert f"{command} acknowledged: {command} done" in log
        # the newest ack is raised as a notification
        await wait_for(pilot, lambda: any("stop: stop done" in m for m in notified), what="the stop's notification")

@pilot_test
async def test_stop_now_after_confirmation(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation")
        assert "step 500" in text_of(app.screen.query_one("#confirm-message"))  # what would be lost
        await pilot.press("y")
        await wait_for(pilot, lambda: control_lines(paths), what="the stop-now line")
        assert [c["command"] for c in control_lines(paths)] == ["stop-now"]
        assert screen.check_action("stop_now", ()) is True


@pilot_test
async def test_startup_shows_phases_then_charts(tmp_path):
    paths = make_run(tmp_path, "startup.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await pilot.pause(0.1)
        assert screen.has_class("-startup")
        phases = text_of(screen.query_one("#pane-phases"))
        assert "Starting up" in phases and "tokenising" in phases and "750/1,000" in phases
        assert not screen.query_one(LossChart).region.area  # charts hidden, not empty
        t = last_t(paths)
        with EventWriter(paths.events) as w:
            w.write({"v": 1, "t": t + 5, "type": "run_started", "plan": {}, "hardware": {}, "world_size": 1,
                     "total_steps": 100})
            w.write({"v": 1, "t": t + 11, "type": "step", **_step(t + 11, 1, 3.0)})
        await wait_for(pilot, lambda: not screen.has_class("-startup"), what="training to start")
        await pilot.pause(0.1)
        assert screen.query_one(LossChart).region.area > 0


@pilot_test
async def test_live_alert_notifies_logs_and_highlights_its_chart(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        assert not screen.alerted  # alerts already in the file are history, not news
        with EventWriter(paths.events) as w:
            w.emit("alert", kind="stall", message="no step for 10 minutes", hint="look at worker.log")
        await wait_for(pilot, lambda: "speed" in screen.alerted, what="the alert")
        await pilot.pause(0.3)
        assert screen.query_one("#chart-speed").has_class("-alert")
        assert any("no step for 10 minutes" in str(n.message) for n in app._notifications)
        await pilot.press("a")
        await pilot.pause(0.3)
        assert not screen.query_one("#chart-speed").has_class("-alert")


@pilot_test
async def test_zoom_axis_and_log_keys(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        chart = screen.query_one(LossChart)
        whole = chart.text
        await pilot.press("z", "z")  # all -> last hour -> last 10 min
        await wait_for(pilot, lambda: chart.window_s == ZOOMS[2][1] and not chart.dirty, what="zoom")
        assert chart.text != whole
        assert "zoom last 10 min" in text_of(screen.query_one("#dash-status"))
        await pilot.press("t")
        await wait_for(pilot, lambda: chart.x_mode == "step" and not chart.dirty, what="steps axis")
        x_labels = [line for line in chart.text.splitlines() if line.strip()][-1]
        assert "600" in x_labels and ":" not in x_labels  # step numbers on the x axis, not clock times
        await pilot.press("l")
        await wait_for(pilot, lambda: chart.log_y and not chart.dirty, what="log scale")


@pilot_test
async def test_narrow_terminal_shows_one_pane_at_a_time(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=NARROW) as pilot:
        screen = await loaded(pilot)
        assert screen.has_class("-narrow")
        shown = [w.id for w in screen.query(".pane") if w.region.area]
        assert shown == ["chart-loss"]
        await pilot.press("3")
        await wait_for(pilot, lambda: screen.query_one("#chart-gpu-util").region.area > 0, what="GPU pane")
        assert not screen.query_one("#chart-loss").region.area
        await wait_for(pilot, lambda: not screen.query_one("#chart-gpu-util").dirty, what="GPU chart drawn")


@pilot_test
async def test_detach_quits_and_leaves_the_run_alone(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    before = paths.events.read_bytes()
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(pilot)
        await pilot.press("d")
        await pilot.pause(0.1)
    assert app.return_code == 0
    assert paths.events.read_bytes() == before and control_lines(paths) == []


@pilot_test
async def test_truncated_events_file_is_read_again(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        first = screen.history
        paths.events.write_bytes(b"".join(paths.events.read_bytes().splitlines(keepends=True)[:200]))
        await wait_for(pilot, lambda: screen.history is not first, what="a fresh history")
        assert screen.history.events == 200


@pilot_test
async def test_recorded_real_run_opens_with_its_outcome(tmp_path):
    # events of a real tiny-model run (tests/fixtures/events/record_tiny_run.py): stopped at step 60
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={"state": "stopped", "heartbeat": 1.0})
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        h = screen.history
        assert h.current_step == 60 and h.step_events == 12 and h.series["eval_loss"].count == 3
        assert h.checkpoints == 2 and h.gpu_indices == []  # a CPU run: no GPU telemetry
        assert "Run stopped: stop requested by record_tiny_run" in text_of(screen.query_one("#dash-banner"))
        assert "stop acknowledged" in log_text(screen)
        assert "no GPU telemetry" in screen.query_one("#chart-gpu-util").text
        assert h.series["loss"].latest < h.series["loss"].view(10).hi[0]  # the loss went down
        assert screen.has_class("-no-scale")  # fp32: no loss scale pane


@pilot_test
async def test_a_static_loss_scale_is_shown_as_static_and_a_dynamic_one_as_dynamic(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    t = last_t(paths)
    with EventWriter(paths.events) as w:
        w.write({"v": 1, "t": t + 6, "type": "step", **_step(t + 6, 601, 2.0), "loss_scale": 1.0,
                 "loss_scale_dynamic": False})
    async with DashApp(paths).run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        assert "1   (static: never moves, skipped steps" in text_of(screen.query_one("#pane-stats"))
        assert not [a for a in screen.history.alerts if a.get("kind") == "loss_scale_collapse" and a["t"] > t]
        with EventWriter(paths.events) as w:
            w.write({"v": 1, "t": t + 12, "type": "step", **_step(t + 12, 602, 2.0), "loss_scale_dynamic": True})
        await wait_for(pilot, lambda: screen.history.current_step == 602, what="step 602")
        await wait_for(pilot, lambda: "dynamic, skipped" in text_of(screen.query_one("#pane-stats")),
                       what="the dynamic scale in the stats")
