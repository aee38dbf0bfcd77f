"""The hardware screen's n (new run) and p (presets) work on every wizard step, and a new run starts from
the default plan, whether from a key or from the command palette."""
from __future__ import annotations

from wizard_helpers import fill, jump, pilot_test, settle, step
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.common.confirm import ConfirmScreen
from zerotui.tui.wizard.demo_hardware import workstation_24gb
from zerotui.tui.wizard.preset_picker import PresetPickerScreen
from zerotui.tui.wizard.state import starter_plan

PRESET = "llama7b-24gb-zero3-cpu"


@pilot_test
async def test_p_opens_the_presets_on_every_step():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        for number in range(1, 6):
            await jump(pilot, number)
            app.screen.set_focus(None)  # outside text boxes, where p is a letter
            await pilot.press("p")
            await settle(pilot)
            assert isinstance(app.screen, PresetPickerScreen), f"p did nothing on step {number}"
            await pilot.press("escape")
            await settle(pilot)


@pilot_test
async def test_n_on_a_step_asks_then_starts_over_from_the_default_plan():
    app = ZeroTuiApp(hardware=workstation_24gb(), preset=PRESET)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert step(pilot) == "review" and app.state.plan.model == "llama-2-7b"
        await jump(pilot, 3)
        app.screen.set_focus(None)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")  # "no" keeps the plan and the step
        await settle(pilot)
        assert step(pilot) == "precision" and app.state.plan.model == "llama-2-7b"
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert step(pilot) == "model"
        assert app.state.plan == starter_plan()


@pilot_test
async def test_palette_new_run_drops_the_edited_plan():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await fill(pilot, "model", "llama-2-7b")
        assert app.state.plan.model == "llama-2-7b"
        await jump(pilot, 4)
        new_run = next(c for c in app.get_system_commands(app.screen) if c.title == "New run")
        new_run.callback()
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert step(pilot) == "model" and app.state.plan == starter_plan()
        assert app.screen.query_one("#f-model").value == starter_plan().model  # the form shows it too


@pilot_test
async def test_new_run_on_an_unchanged_plan_does_not_ask():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await jump(pilot, 2)
        app.screen.set_focus(None)  # outside text boxes, where n is a letter
        await pilot.press("n")
        await settle(pilot)
        assert step(pilot) == "model"
