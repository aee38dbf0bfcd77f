"""Launch from the wizard for real: the tiny CPU demo, keyboard only, starts a detached DeepSpeed worker
and opens its dashboard; the run is then stopped (stop-now) and must end."""
from __future__ import annotations

import time


from wizard_helpers import fill, new_run_at_data, pilot_test, settle, step
from zerotui.core.run.folder import list_runs, run_state, send_control
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only



@pilot_test
async def test_launch_tiny_cpu_demo_opens_the_dashboard(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    runs = tmp_path / "runs"
    app = ZeroTuiApp(hardware=cpu_only(), runs_dir=runs)
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        await new_run_at_data(pilot)
        await fill(pilot, "seq_len", "64")
        await fill(pilot, "max_steps", "3")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert step(pilot) == "review"
        await pilot.press("l")
        for _ in range(100):
            await settle(pilot)
            if type(app.screen).__name__ == "DashboardScreen":
                break
        assert type(app.screen).__name__ == "DashboardScreen"
        keyboard_to_launch = time.perf_counter() - t0
    (run,) = list_runs(runs)
    assert run.paths.plan.exists() and run.paths.ds_config.exists()
    assert "max_steps: 3" in run.paths.plan.read_text()
    assert keyboard_to_launch < 60
    # Detached: the run outlives the app. Stop it and wait for the worker to go.
    send_control(run.paths, "stop-now")
    deadline = time.time() + 240
    while time.time() < deadline and run_state(run.paths) in ("starting", "running", "paused", "stopping"):
        time.sleep(1)
    assert run_state(run.paths) in ("completed", "stopped", "failed")


@pilot_test
async def test_a_launch_warning_is_shown_not_only_logged(tmp_path, monkeypatch):
    """start_run's warnings (kept checkpoints that will not all fit on the disk) reached only worker.log
    from the wizard; `zerotui train` prints them."""
    from zerotui.core.errors import RunError
    from zerotui.core.run import start

    said = "keeping 3 checkpoint(s) of 15.3 MiB takes up to 61.1 MiB"

    def fake_start_run(plan, hardware=None, runs_dir=None, force=False, warn=None, **_):
        warn(said)
        raise RunError("stopped here by the test", "nothing to do")

    monkeypatch.setattr(start, "start_run", fake_start_run)
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    app = ZeroTuiApp(hardware=cpu_only(), runs_dir=tmp_path / "runs")
    async with app.run_test(size=(120, 40)) as pilot:
        await new_run_at_data(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        await pilot.press("l")
        for _ in range(50):
            await settle(pilot)
            if any(said in str(n.message) for n in app._notifications):
                break
        shown = [n for n in app._notifications if said in str(n.message)]
        assert len(shown) == 1 and shown[0].severity == "warning" and shown[0].title == "Launch warning"
