"""Pilot tests: the ZeRO step's GPU choice (how many, which) on a machine with several GPUs, and the
budget bar following the world size it gives (the real estimator, fixed stated hardware)."""
from __future__ import annotations

import pytest
from textual.widgets import Static

from wizard_helpers import choose, fill, jump, pilot_test, settle
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb
from zerotui.tui.wizard.budget_bar import BudgetBar, BudgetRow
from zerotui.core.estimate import budget as memory


SIZE = (120, 40)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))


def gpu_need(app) -> int:
    return app.screen.query_one(BudgetBar).query_one("#budget-gpu", BudgetRow).need


def note(app) -> str:
    return str(app.screen.query_one("#gpu-note", Static).render())


def row_error(app, field: str) -> str:
    return str(app.screen.query_one(f"#row-{field} .field-error", Static).render())


async def zero_step(pilot, model: str) -> None:
    await settle(pilot)
    await pilot.press("n")
    await settle(pilot)
    await fill(pilot, "model", model)
    await jump(pilot, 4)


@pilot_test
async def test_gpu_count_and_indices_set_the_world_size_and_the_per_gpu_budget():
    from zerotui.core.hardware.detect import stated_hardware

    hw = stated_hardware(gpu_mem="80GiB", gpus=8, ram="1TiB", base=workstation_24gb())
    app = ZeroTuiApp(hardware=hw)
    async with app.run_test(size=SIZE) as pilot:
        await zero_step(pilot, "llama-2-7b")
        assert app.screen.query_one("#row-gpu_ids").display  # several GPUs: which ones is asked
        await choose(pilot, "stage", 3)  # stage 3 shards weights too: the per-GPU need falls with more GPUs
        assert "8 processes on GPUs 0,1,2,3,4,5,6,7" in note(app) and "world size 8" in note(app)
        all_eight = gpu_need(app)
        await fill(pilot, "gpus", "1")
        assert app.state.plan.world_size(hw.gpu_count) == 1 and "1 process on GPU 0" in note(app)
        one = gpu_need(app)
        await fill(pilot, "gpus", "2")
        two = gpu_need(app)
        assert one > two > all_eight, (one, two, all_eight)
        assert two == memory.estimate(app.state.plan, hw).gpu_bytes
        # Chosen indices instead of a count: the same world size, hence the same budget, on GPUs 2 and 5.
        await fill(pilot, "gpus", "")
        await fill(pilot, "gpu_ids", "2,5")
        assert app.state.plan.gpu_ids == [2, 5] and app.state.plan.world_size(hw.gpu_count) == 2
        assert "2 processes on GPUs 2,5" in note(app)
        assert gpu_need(app) == two
        # An index the machine does not have is marked on its row, with what would work.
        await fill(pilot, "gpu_ids", "2,9")
        assert "not 9" in row_error(app, "gpu_ids") and "below 8" in row_error(app, "gpu_ids")
        await fill(pilot, "gpu_ids", "2,3")
        assert row_error(app, "gpu_ids") == ""


@pilot_test
async def test_a_machine_without_gpus_runs_n_cpu_processes_and_hides_the_indices():
    app = ZeroTuiApp(hardware=cpu_only())
    async with app.run_test(size=SIZE) as pilot:
        await zero_step(pilot, "tiny")
        assert not app.screen.query_one("#row-gpu_ids").display
        await fill(pilot, "gpus", "2")
        assert "2 CPU processes" in note(app) and app.state.plan.world_size(0) == 2
