"""Every key a wizard screen's footer shows does something there.

For each screen (the hardware screen and the five steps), with the focus where the screen puts it and
with no focus, the keys come from Textual's map of the screen's active bindings (shown, enabled; what the
footer is built from), never from a hand list. Each is pressed and must change something a person sees:
another screen or dialog, another step, the breakdown, the plan, a notification, or the App quitting
(pressed last). A key that would do nothing must not be shown (``check_action``)."""
from __future__ import annotations

import pytest
from wizard_helpers import jump, pilot_test, settle
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import workstation_24gb
from zerotui.tui.wizard.hardware import HardwareScreen

QUIT = ("quit", "app.quit")  # the App's own binding, or a screen's copy of it


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.chdir(tmp_path)  # the export dialog proposes a folder under the working directory


def shown_keys(app) -> list[tuple[str, str]]:
    return [(key, active.binding.action) for key, active in app.screen.active_bindings.items()
            if active.binding.show and active.enabled]


def seen(app) -> tuple:
    """What a person can tell apart on screen after a key press."""
    return (id(app.screen), len(app.screen_stack), app.current_step, app.breakdown_expanded,
            app.state.plan, len(app._notifications), app.return_code)


async def back_to(pilot, home, step: str, plan, focused) -> None:
    """Undo what the last key did: close dialogs, return to the screen, its plan, breakdown and focus."""
    app = pilot.app
    while app.screen is not home and len(app.screen_stack) > 1 and not getattr(app.screen, "STEP", ""):
        app.pop_screen()
        await settle(pilot)
    if step and app.current_step != step:
        app.go_to_step(step)
    elif not step and app.screen is not home:
        await pilot.press("escape")
    await settle(pilot)
    if app.state.plan != plan:
        app.apply_plan(plan)
    app.breakdown_expanded = False
    app.clear_notifications()
    app.screen.set_focus(app.screen.query_one(f"#{focused}") if focused else None)
    await settle(pilot)


async def press_every_key(pilot, step: str, focus: bool) -> list[str]:
    app = pilot.app
    home = app.screen
    if not focus:
        app.screen.set_focus(None)
        await settle(pilot)
    focused = app.focused.id if app.focused is not None else None
    plan = app.state.plan
    keys = shown_keys(app)
    assert keys, f"{step or 'hardware'}: no keys shown"
    dead = []
    for key, action in keys:
        if action in QUIT:
            continue
        app.clear_notifications()
        before = seen(app)
        await pilot.press(key)
        await settle(pilot)
        if seen(app) == before:
            dead.append(f"{key} ({action})")
        await back_to(pilot, home if not step else None, step, plan, focused)
        if step:
            home = app.screen
    return dead


SCREENS = ["hardware", "model", "data", "precision", "zero", "review"]


@pytest.mark.parametrize("screen", SCREENS)
@pilot_test
async def test_every_shown_key_does_something_on(screen, tmp_path):
    app = ZeroTuiApp(hardware=workstation_24gb(), runs_dir=tmp_path / "runs")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        if screen != "hardware":
            await pilot.press("n")
            await settle(pilot)
            if screen == "review":
                # A 7B plan that does not fit: Launch refuses with its reason instead of starting a run here
                # (tests/tui/test_wizard_launch.py launches for real), and Fit has something to change.
                app.apply_plan(app.state.plan.with_changes(model="llama-2-7b", stage=2, offload_optimizer="none",
                                                           offload_params="none"))
            await jump(pilot, SCREENS.index(screen))
        else:
            assert isinstance(app.screen, HardwareScreen)
        step = "" if screen == "hardware" else screen
        dead = await press_every_key(pilot, step, focus=True)
        dead += await press_every_key(pilot, step, focus=False)
        assert not dead, f"{screen}: these shown keys did nothing: {dead}"
        quit_keys = [k for k, action in shown_keys(app) if action in QUIT]
        assert quit_keys, f"{screen}: ctrl+q is not shown"
        await pilot.press(quit_keys[0])
        await pilot.pause(0.1)
        assert app.return_code is not None, f"{screen}: {quit_keys[0]} did not quit"
