"""The hardware screen: what was found, the warnings in words, and the three ways on (new run, preset,
attach), plus the app-wide conventions reachable from it (help, command palette, theme)."""
from __future__ import annotations

import time

from textual.widgets import OptionList, Static

from dashboard_helpers import text_of
from wizard_helpers import pilot_test, settle, step
from zerotui.core.run.folder import new_run_dir, write_status
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb


def _texts(app, selector: str) -> str:
    return "\n".join(str(w.render()) for w in app.screen.query(selector))


@pilot_test
async def test_hardware_screen_shows_the_machine_and_its_limits_in_words():
    app = ZeroTuiApp(hardware=cpu_only())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        summary = str(app.screen.query_one("#hw-summary", Static).render())
        assert "2 cores" in summary and "24.0 GiB total" in summary and "(hardware fake, not detected)" in summary
        warnings = _texts(app, "#hw-warnings Static")
        assert "No GPU found" in warnings and "NVMe offload is unavailable" in warnings
        assert not app.screen.query_one("#hw-gpus").display      # no empty GPU table


@pilot_test
async def test_detection_runs_in_a_worker_when_no_hardware_is_given(monkeypatch):
    monkeypatch.setattr("zerotui.core.hardware.detect.detect", lambda probe_disks=True: workstation_24gb())
    app = ZeroTuiApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.hardware is not None and app.hardware.gpus[0].name == "NVIDIA GeForce RTX 4090"
        assert app.screen.query_one("#hw-gpus").display
        assert not app.screen.query_one("#hw-loading").display


@pilot_test
async def test_recent_runs_are_listed_and_open_the_dashboard(tmp_path):
    runs = tmp_path / "runs"
    paths = new_run_dir(runs, "demo")
    paths.plan.write_text("model: tiny\n")
    write_status(paths, state="completed", step=20, heartbeat=time.time())
    app = ZeroTuiApp(hardware=cpu_only(), runs_dir=runs)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        options = app.screen.query_one("#hw-runs", OptionList)
        assert options.display and options.option_count == 1
        assert "demo" in str(options.get_option_at_index(0).prompt) and "completed" in str(
            options.get_option_at_index(0).prompt)
        await pilot.press("a")                                  # the full list (the runs screen)
        await settle(pilot)
        assert type(app.screen).__name__ == "RunsScreen"
        app.pop_screen()
        await settle(pilot)
        options.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert type(app.screen).__name__ == "DashboardScreen"


@pilot_test
async def test_help_palette_and_theme():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert type(app.screen).__name__ == "HelpScreen"
        help_text = text_of(app.screen.query_one("#help-text"))
        assert "New run" in help_text and "Attach" in help_text  # the hardware screen's own keys
        await pilot.press("escape")
        await pilot.press("n")
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Fit to this machine", "Open a preset", "Attach to a run", "Go to step 5: Review", "Help"):
            assert wanted in titles
        await pilot.press("ctrl+r")
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Launch", "Save preset", "Export", "Copy ds_config.json"} <= set(titles)
        theme = app.theme
        await pilot.press("ctrl+t")                             # Textual's theme picker
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert app.theme != theme and step(pilot) == "review"
