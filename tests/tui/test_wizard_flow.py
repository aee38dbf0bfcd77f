"""Pilot tests: the whole wizard driven by keyboard, on fixed fake hardware, against the real estimator,
recommender, presets and DeepSpeed-config writer."""
from __future__ import annotations

import pytest
from textual.widgets import Button, Static

from wizard_helpers import choose, fill, jump, new_run, new_run_at_data, pilot_test, settle, step
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb
from zerotui.tui.wizard.budget_bar import BudgetBar, BudgetRow, format_bytes
from zerotui.core.estimate import budget as memory


SIZE = (120, 40)


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    # Saved presets and the HF cache of whoever runs the tests must not leak into what the wizard offers.
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    # The CPU's fp16 support decides a disabled choice; pin it so the test means the same everywhere.
    monkeypatch.setattr("zerotui.tui.wizard.precision._cpu_has_fp16", lambda cpuinfo=None: False)


def bar(app) -> dict[str, BudgetRow]:
    b = app.screen.query_one(BudgetBar)
    return {k: b.query_one(f"#budget-{k}", BudgetRow) for k in ("gpu", "cpu", "nvme")}


def shown(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


@pilot_test
async def test_tiny_cpu_demo_from_hardware_to_review_by_keyboard(tmp_path):
    hw = cpu_only()
    app = ZeroTuiApp(hardware=hw, runs_dir=tmp_path / "runs")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert step(pilot) == "HardwareScreen"
        await pilot.press("n")
        await settle(pilot)
        assert step(pilot) == "model"
        await fill(pilot, "model", "tiny")
        assert "parameters" in shown(app, "#model-info")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert step(pilot) == "data"
        assert "alpaca" in shown(app, "#data-format-note")  # the shipped sample, previewed
        await fill(pilot, "seq_len", "128")
        await fill(pilot, "micro_batch", "2")
        await fill(pilot, "max_steps", "20")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert step(pilot) == "precision"
        await choose(pilot, "precision", "bf16")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert step(pilot) == "zero"
        await choose(pilot, "stage", 2)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert step(pilot) == "review"

        plan = app.state.plan
        assert (plan.model, plan.data, plan.seq_len, plan.micro_batch, plan.max_steps, plan.precision,
                plan.stage, plan.offload_optimizer) == ("tiny", "sample", 128, 2, 20, "bf16", 2, "none")
        expected = memory.estimate(plan, hw)
        rows = bar(app)
        assert rows["cpu"].need == expected.cpu_bytes and rows["cpu"].level == "ok"
        assert rows["gpu"].level == "none"  # no GPU: said in words, not an empty red bar
        assert format_bytes(expected.cpu_bytes) in str(rows["cpu"].query_one(".budget-numbers").render())
        assert not app.screen.query_one("#launch", Button).disabled
        assert "Ready to launch" in shown(app, "#launch-status")
        assert '"train_micro_batch_size_per_gpu": 2' in shown(app, "#review-config")
        assert "zerotui.core.run.worker" in shown(app, "#review-command")


@pilot_test
async def test_7b_zero3_offload_on_24gb_by_keyboard_matches_the_preset():
    from zerotui.core.plan.presets import load_preset

    hw = workstation_24gb()
    app = ZeroTuiApp(hardware=hw)
    async with app.run_test(size=SIZE) as pilot:
        await new_run(pilot)
        await fill(pilot, "model", "llama-2-7b")
        assert "6,738,415,616" in shown(app, "#model-info")  # the published count (docs/estimator.md)
        await pilot.press("ctrl+n")
        await settle(pilot)
        await fill(pilot, "micro_batch", "2")
        await fill(pilot, "grad_accum", "8")
        await fill(pilot, "seq_len", "1024")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await choose(pilot, "precision", "fp16")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await choose(pilot, "stage", 3)
        await choose(pilot, "offload_optimizer", "cpu")
        await choose(pilot, "offload_params", "cpu")
        app.screen.query_one("#f-grad_ckpt").focus()
        await pilot.press("space")
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert step(pilot) == "review"

        preset = load_preset("llama7b-24gb-zero3-cpu")
        plan = app.state.plan
        for f in ("model", "method", "precision", "stage", "offload_optimizer", "offload_params", "micro_batch",
                  "grad_accum", "seq_len", "grad_ckpt", "pin_memory"):
            assert getattr(plan, f) == getattr(preset, f), f
        expected = memory.estimate(plan, hw)
        rows = bar(app)
        assert app.screen.query_one(BudgetBar).has_class("fits" if expected.fits else "no-fit")
        assert rows["gpu"].need == expected.gpu_bytes and rows["gpu"].capacity == 24 * 2**30
        assert rows["cpu"].need == expected.cpu_bytes
        numbers = str(rows["gpu"].query_one(".budget-numbers").render())
        assert f"{format_bytes(expected.gpu_bytes)} / 24.0 GiB" in numbers
        assert '"offload_param"' in shown(app, "#review-config")


@pilot_test
async def test_a_preset_opens_on_its_review():
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert step(pilot) == "review"
        assert app.state.plan.name == "llama7b-24gb-zero3-cpu"
        await pilot.press("escape")  # back walks the steps
        await settle(pilot)
        assert step(pilot) == "zero"


@pilot_test
async def test_preset_picker_by_keyboard():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        options = app.screen.query_one("#preset-options")
        names = [options.get_option_at_index(i).id for i in range(options.option_count)]
        assert "llama7b-24gb-zero3-nvme" in names
        for _ in range(names.index("llama7b-24gb-zero3-nvme")):
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        assert step(pilot) == "review" and app.state.plan.offload_optimizer == "nvme"


@pilot_test
async def test_offload_and_batch_move_the_bar_the_expected_way():
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await jump(pilot, 2)
        start = bar(app)["gpu"].need
        await fill(pilot, "micro_batch", "8")                   # more activations per GPU
        assert bar(app)["gpu"].need > start
        await fill(pilot, "micro_batch", "2")
        assert bar(app)["gpu"].need == start
        await jump(pilot, 4)
        assert step(pilot) == "zero"
        before = {k: r.need for k, r in bar(app).items()}
        app.screen.query_one("#f-grad_ckpt").focus()           # checkpointing off: every activation kept
        await pilot.press("space")
        await settle(pilot)
        assert not app.state.plan.grad_ckpt and bar(app)["gpu"].need > before["gpu"]
        await pilot.press("space")
        await settle(pilot)
        assert app.state.plan.grad_ckpt and bar(app)["gpu"].need == before["gpu"]
        await choose(pilot, "offload_params", "none")           # weights back on the GPU
        mid = {k: r.need for k, r in bar(app).items()}
        assert mid["gpu"] > before["gpu"] and mid["cpu"] < before["cpu"]
        await choose(pilot, "offload_optimizer", "none")        # optimizer states back on the GPU too
        after = {k: r.need for k, r in bar(app).items()}
        assert after["gpu"] > mid["gpu"] and after["cpu"] < mid["cpu"]
        assert bar(app)["gpu"].level == "over"


@pilot_test
async def test_stage_moves_the_gpu_bar_down_on_several_gpus():
    from zerotui.core.hardware.detect import stated_hardware

    hw = stated_hardware(gpu_mem="80GiB", gpus=8, ram="1TiB", base=workstation_24gb())
    app = ZeroTuiApp(hardware=hw)
    async with app.run_test(size=SIZE) as pilot:
        await new_run(pilot)
        await fill(pilot, "model", "llama-2-7b")
        await jump(pilot, 4)
        needs = []
        for stage in (0, 1, 2, 3):
            await choose(pilot, "stage", stage)
            needs.append(bar(app)["gpu"].need)
        assert needs[0] > needs[1] > needs[2] > needs[3], needs


@pilot_test
async def test_invalid_input_is_marked_and_blocks_launch(tmp_path):
    app = ZeroTuiApp(hardware=cpu_only(), runs_dir=tmp_path / "runs")
    async with app.run_test(size=SIZE) as pilot:
        await new_run_at_data(pilot)
        await fill(pilot, "micro_batch", "0")
        row = app.screen.query_one("#row-micro_batch")
        assert row.has_class("has-error")
        assert "greater than or equal to 1" in str(row.query_one(".field-error").render())
        assert app.screen.query_one(BudgetBar).has_class("invalid")
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert step(pilot) == "review"
        assert app.screen.query_one("#launch", Button).disabled
        assert "micro_batch" in shown(app, "#launch-status")
        await pilot.press("l")                                  # refused, with the reason
        await settle(pilot)
        assert not (tmp_path / "runs").exists()
        await jump(pilot, 2)
        await fill(pilot, "micro_batch", "1")
        await jump(pilot, 4)
        assert app.screen.query_one("#f-offload_params").query("Choice")[1].disabled  # cpu: stage 3 only
        await choose(pilot, "stage", 3)
        await choose(pilot, "offload_params", "cpu")
        await choose(pilot, "stage", 2)                         # now offload_params=cpu is wrong: said there
        assert "needs stage 3" in str(app.screen.query_one("#row-offload_params .field-error").render())
        assert not app.screen.query_one("#row-stage").has_class("has-error")
        await choose(pilot, "offload_params", "none")
        assert not app.screen.query_one("#row-offload_params").has_class("has-error") and app.state.valid


@pilot_test
async def test_fit_turns_a_7b_full_finetune_from_red_to_green():
    hw = workstation_24gb()
    app = ZeroTuiApp(hardware=hw)
    async with app.run_test(size=SIZE) as pilot:
        await new_run(pilot)
        await fill(pilot, "model", "llama-2-7b")
        await jump(pilot, 4)
        await choose(pilot, "stage", 2)
        budget_bar = app.screen.query_one(BudgetBar)
        assert budget_bar.has_class("no-fit") and bar(app)["gpu"].level == "over"
        original = app.state.plan
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert type(app.screen).__name__ == "FitScreen"
        assert app.state.plan == app.last_fit.recommendations[0].plan != original
        await pilot.press("u")                                  # Undo: back to the plan that did not fit
        await settle(pilot)
        assert app.state.plan == original and app.screen.query_one(BudgetBar).has_class("no-fit")
        await pilot.press("ctrl+g")
        await settle(pilot)
        best = app.last_fit.recommendations[0]
        assert best.changes and app.state.plan == best.plan
        changes = str(app.screen.query_one("#fit-changes").render())
        assert all(field in changes for field in best.changes)  # what changed is shown
        await pilot.press("escape")                             # keep the applied plan
        await settle(pilot)
        assert step(pilot) == "zero"
        assert app.screen.query_one(BudgetBar).has_class("fits")
        assert bar(app)["gpu"].level in ("ok", "tight") and memory.estimate(app.state.plan, hw).fits
