"""Pilot tests: the GPU memory cap on the ZeRO step. A typed size becomes the budget bar's GPU capacity in
the same key press, a size the CLI's parser refuses is marked on its row, and the plan the wizard saves
carries the cap (the real estimator, a fixed 24 GiB workstation)."""
from __future__ import annotations

import pytest
import yaml
from textual.widgets import Input, Static
from wizard_helpers import fill, jump, pilot_test, settle
from zerotui.core.plan.presets import load_preset
from zerotui.core.sizes import parse_size
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.budget_bar import BudgetBar, BudgetRow
from zerotui.tui.wizard.demo_hardware import workstation_24gb

GIB = 1 << 30


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))


def gpu_row(app) -> BudgetRow:
    return app.screen.query_one(BudgetBar).query_one("#budget-gpu", BudgetRow)


def row_error(app) -> str:
    return str(app.screen.query_one("#row-gpu_mem_cap .field-error", Static).render())


@pilot_test
async def test_a_typed_cap_is_the_bars_gpu_capacity_and_is_saved_with_the_plan(tmp_path):
    hw = workstation_24gb()
    card = hw.gpus[0].total_bytes
    app = ZeroTuiApp(hardware=hw)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await fill(pilot, "model", "llama-2-7b")
        await jump(pilot, 4)
        help_text = str(app.screen.query_one("#row-gpu_mem_cap .field-help", Static).render())
        assert "allocator" in help_text and "capacity" in help_text and "Empty" in help_text
        assert gpu_row(app).capacity == card  # no cap: the whole card
        need = gpu_row(app).need

        await fill(pilot, "gpu_mem_cap", "12GiB")
        assert app.state.plan.gpu_mem_cap == 12 * GIB
        assert gpu_row(app).capacity == 12 * GIB and gpu_row(app).need == need
        assert "12.0 GiB" in str(gpu_row(app).query_one(".budget-numbers").render())

        # The CLI's spellings mean the same here: 20G is binary, 20GB decimal.
        await fill(pilot, "gpu_mem_cap", "20G")
        assert gpu_row(app).capacity == 20 * GIB
        await fill(pilot, "gpu_mem_cap", "20GB")
        assert gpu_row(app).capacity == parse_size("20GB") == 20 * 10**9

        # Not a size: the row says so and how to write one, and the plan cannot be launched.
        await fill(pilot, "gpu_mem_cap", "20 bananas")
        error = row_error(app)
        assert "not a size" in error and "24GiB" in error, error
        assert "gpu_mem_cap" in app.state.errors
        assert app.launch_blockers()[0]  # an invalid answer cannot be launched

        await fill(pilot, "gpu_mem_cap", "")
        assert app.state.plan.gpu_mem_cap is None and gpu_row(app).capacity == card and row_error(app) == ""

        await fill(pilot, "gpu_mem_cap", "16GiB")
        await jump(pilot, 5)
        app.screen.set_focus(None)
        await pilot.press("s")
        await settle(pilot)
        box = app.screen.query_one("#preset-name", Input)
        box.value = "capped"
        await pilot.press("enter")
        await settle(pilot)
    saved = tmp_path / "presets" / "capped.yaml"
    assert yaml.safe_load(saved.read_text())["gpu_mem_cap"] == 16 * GIB
    assert load_preset("capped").gpu_mem_cap == 16 * GIB


@pilot_test
async def test_a_preset_with_a_cap_shows_it_as_a_size_on_the_zero_step(tmp_path):
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.apply_plan(app.state.plan.with_changes(gpu_mem_cap=10 * GIB))
        await jump(pilot, 4)
        assert app.screen.query_one("#f-gpu_mem_cap", Input).value == "10GiB"
        assert gpu_row(app).capacity == 10 * GIB
