"""What the dashboard says is true: a resumed run is live while its worker starts, start-up has one clock,
elapsed is training time (a run's time stopped is not in it), and detaching says how to come back."""
from __future__ import annotations

import os

from dashboard_helpers import DashApp, last_t, loaded, make_run, pilot_test, text_of, utc, wait_for  # noqa: F401
from zerotui.core.atomic import atomic_write_json
from zerotui.core.events.stream import EventWriter

WIDE = (160, 48)
T0 = 1767225600.0


def _append(paths, *events: dict) -> None:
    with EventWriter(paths.events) as w:
        for ev in events:
            w.write({"v": 1, **ev})


def _step(t: float, step: int, elapsed: float) -> dict:
    return {"t": t, "type": "step", "step": step, "epoch": 0.1, "loss": 2.0, "lr": 1e-4, "grad_norm": 1.0,
            "loss_scale": None, "skipped": 0, "samples_per_s": 4.0, "tokens_per_s": 100.0, "tflops": 0.1,
            "step_time": 1.0, "elapsed_s": elapsed}


def _row(screen, label: str) -> str:
    for line in text_of(screen.query_one("#pane-stats")).splitlines():
        if line.strip().startswith(label):
            return line.strip()[len(label):].strip()
    raise AssertionError(f"no {label!r} row in the stats")


@pilot_test
async def test_a_resumed_run_is_starting_while_its_worker_has_not_written_yet(tmp_path):
    # `zerotui resume` wrote "starting" 5 s after the old worker's run_finished; the new worker (this
    # test's pid stands in for its supervisor) has not written an event yet.
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={})
    t = last_t(paths)
    atomic_write_json(paths.status, {"state": "starting", "launched": t + 5, "heartbeat": t + 5, "resumed": True,
                                     "pid": os.getpid(), "pids": [os.getpid()]}, fsync=False)
    async with DashApp(paths).run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: screen.state == "starting", what="the status")
        await pilot.pause(0.1)
        assert screen.outcome == "starting"
        status = text_of(screen.query_one("#dash-status"))
        assert "starting" in status and "read-only" not in status
        assert "Run stopped" not in text_of(screen.query_one("#dash-banner"))
        assert screen.check_action("resume_run", ()) is False  # a second resume would be refused
        assert screen.check_action("stop", ()) is True


@pilot_test
async def test_a_stopped_run_stays_stopped_when_no_newer_worker_was_launched(tmp_path):
    # status.json still "running" from the worker that wrote run_finished (the supervisor's final status
    # not written yet): no launch after the finish, so the stream's outcome stands.
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={})
    t = last_t(paths)
    atomic_write_json(paths.status, {"state": "running", "launched": t - 80, "heartbeat": t,
                                     "pid": os.getpid(), "pids": [os.getpid()]}, fsync=False)
    async with DashApp(paths).run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: screen.state == "running", what="the status")
        assert screen.outcome == "stopped"


@pilot_test
async def test_start_up_has_one_clock(tmp_path):
    # DeepSpeed's initialise is done (run_started), the first step is not: the panel and the numbers
    # beside it both count from the worker's first event.
    paths = make_run(tmp_path, "startup.jsonl")
    _append(paths, {"t": T0 + 30, "type": "run_started", "plan": {}, "hardware": {}, "world_size": 1,
                    "total_steps": 100},
            {"t": T0 + 31, "type": "phase", "name": "first step", "done": None, "total": None})
    async with DashApp(paths).run_test(size=WIDE) as pilot:  # the clock: 10 s after the last event
        screen = await loaded(pilot)
        await pilot.pause(0.2)
        assert screen.has_class("-startup")
        assert "Starting up — 41s" in text_of(screen.query_one("#pane-phases"))
        assert _row(screen, "start-up") == "41s"


@pilot_test
async def test_elapsed_is_training_time_not_the_hour_the_run_sat_stopped(tmp_path):
    paths = make_run(tmp_path, "startup.jsonl", status={})
    _append(paths, {"t": T0 + 30, "type": "run_started", "plan": {}, "hardware": {}, "world_size": 1,
                    "total_steps": 100},
            *[_step(T0 + 30 + 10 * i, i, 10.0 * i) for i in range(1, 11)],
            {"t": T0 + 131, "type": "run_finished", "state": "stopped", "reason": "stop requested", "step": 10},
            # an hour later: `zerotui resume`
            {"t": T0 + 3731, "type": "phase", "name": "importing libraries", "done": None, "total": None},
            {"t": T0 + 3760, "type": "run_started", "plan": {}, "hardware": {}, "world_size": 1,
             "total_steps": 100, "start_step": 10, "resumed_from": "step10"})
    atomic_write_json(paths.status, {"state": "running", "launched": T0 + 3730, "heartbeat": T0 + 3760,
                                     "pid": os.getpid(), "pids": [os.getpid()]}, fsync=False)
    clock = {"now": T0 + 3765}
    async with DashApp(paths, clock=lambda: clock["now"]).run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await pilot.pause(0.2)
        # the resumed worker has not trained yet: the clock stands where the first worker left it
        assert _row(screen, "elapsed") == "1m 40s"
        _append(paths, _step(T0 + 3770, 11, 110.0))
        clock["now"] = T0 + 3775
        await wait_for(pilot, lambda: screen.history.current_step == 11, what="step 11")
        await wait_for(pilot, lambda: _row(screen, "elapsed") == "1m 55s", what="training time: 110 s + 5 s")


@pilot_test
async def test_detach_says_the_run_goes_on_and_how_to_come_back(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: screen.state == "running", what="running")
        await pilot.press("d")
        await pilot.pause(0.1)
    assert app.return_code == 0
    assert "keeps training" in app.return_value and f"zerotui attach {paths.name}" in app.return_value


@pilot_test
async def test_ctrl_q_on_the_dashboard_says_the_same(tmp_path):
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={"state": "stopped", "heartbeat": 1.0})
    app = DashApp(paths)
    async with app.run_test(size=WIDE) as pilot:
        await loaded(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause(0.1)
    assert app.return_value.startswith(f"Left run {paths.name} (stopped)")
    assert f"zerotui attach {paths.name}" in app.return_value


def test_the_note_is_printed_after_the_app_has_left_the_screen(monkeypatch, capsys):
    from zerotui.tui import launch

    note = "Detached from run r1: it keeps training in the background. `zerotui attach r1` comes back to it."

    class FakeApp:
        def __init__(self, **kwargs) -> None:
            self.return_value, self.return_code = None, 0

        def run(self) -> None:
            assert capsys.readouterr().out == ""  # nothing while the UI has the screen
            self.return_value = note

    monkeypatch.setattr("zerotui.tui.app.ZeroTuiApp", FakeApp)
    assert launch.run_attach("r1") == 0
    assert capsys.readouterr().out.strip() == note


def test_desktop_notification_sequences_are_written_through_the_driver_and_cleaned():
    """tui/common/desktop.py: the bell, OSC 777 and OSC 9, with ';' and control characters taken out of the
    text (they would end or split the sequence); nothing from a headless app."""
    from zerotui.tui.common.desktop import desktop_notify

    class Driver:
        def __init__(self):
            self.out = []

        def write(self, data):
            self.out.append(data)

    class App:
        is_headless = False

        def __init__(self):
            self._driver = Driver()
            self.bells = 0

        def bell(self):
            self.bells += 1

    app = App()
    assert desktop_notify(app, "zerotui r: alert (disk)", "full; 3 MiB\x07free\nnow")
    assert app.bells == 1
    assert app._driver.out == ["\x1b]777;notify;zerotui r: alert (disk);full  3 MiB free now\x1b\\",
                               "\x1b]9;zerotui r: alert (disk): full  3 MiB free now\x07"]
    app.is_headless = True
    assert not desktop_notify(app, "t", "b") and app.bells == 1
