"""What the TUI says is true and in its own words: checkpoint intervals without a "0 minutes", no CLI
flags where a button or field does it, every data format training reads, no "on the GPU" without one, the
ZeRO step's one-process note from the estimate, and a saved preset's description filled from the plan."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from wizard_helpers import pilot_test, settle
from zerotui.core.data.files import SUFFIXES
from zerotui.core.errors import DataError
from zerotui.core.estimate.budget import estimate
from zerotui.core.model.spec import spec_for_plan
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.common.error_modal import ErrorScreen
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.wizard.budget_bar import format_bytes
from zerotui.tui.wizard.data_method import DATA_SUFFIXES
from zerotui.tui.wizard.data_preview import preview
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb
from zerotui.tui.wizard.field_help import FieldRow
from zerotui.tui.wizard.plan_words import checkpoint_words, plan_in_words, short_description
from zerotui.tui.wizard.stage_note import stage_note
from zerotui.tui.wizard.state import starter_plan
from zerotui.tui.wizard.zero_offload import offload_choices


@pytest.mark.parametrize(("steps", "minutes", "said"), [
    (30, 0, "Checkpoints every 30 steps, keeping"),
    (0, 10, "Checkpoints every 10 minutes, keeping"),
    (500, 30, "Checkpoints every 500 steps or every 30 minutes, whichever comes first"),
    (0, 0, "No interval checkpoints"),
])
def test_checkpoint_words_leave_out_a_trigger_that_is_off(steps, minutes, said):
    plan = starter_plan().with_changes(save_interval=steps, save_minutes=minutes)
    assert checkpoint_words(plan).startswith(said)
    words = " ".join(plan_in_words(plan, workstation_24gb()))
    assert " 0 minutes" not in words and " 0 steps" not in words


def test_cli_flags_become_the_tuis_buttons_and_fields():
    fit_hint = "`zerotui fit` lists plans that fit; --force launches anyway"
    assert "--" not in in_tui_words(fit_hint) and '"Launch anyway"' in in_tui_words(fit_hint)
    resume = "start a new run with `zerotui train` (e.g. with a higher --max-steps)"
    assert "--max-steps" not in in_tui_words(resume) and "Max steps" in in_tui_words(resume)
    screen = ErrorScreen("The run could not start", "the plan does not fit this machine", fit_hint)
    assert "--force" not in screen.hint and "Launch anyway" in screen.hint


@pilot_test
async def test_no_wizard_field_help_names_a_cli_flag():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for step in ("model", "data", "precision", "zero"):
            app.go_to_step(step)
            await settle(pilot)
            for row in app.screen.query(FieldRow):
                assert "--" not in row.help_text, f"{row.field}: {row.help_text}"
        app.go_to_step("data")
        await settle(pilot)
        assert "Max steps" in app.screen.query_one("#row-epochs", FieldRow).help_text


def test_the_data_hints_name_every_format_training_reads(tmp_path):
    assert set(DATA_SUFFIXES) == set(SUFFIXES)  # the picker offers no file training refuses (.tsv)
    with pytest.raises(DataError) as err:
        preview(str(tmp_path / "missing.jsonl"))
    for suffix in SUFFIXES:
        assert suffix in err.value.hint
    tsv = tmp_path / "rows.tsv"
    tsv.write_text("text\nhello\n")
    with pytest.raises(DataError, match="unknown type"):
        preview(str(tsv))


def test_offload_none_is_not_on_the_gpu_without_one():
    for field in ("offload_optimizer", "offload_params"):
        labels = [label for _, label, _ in offload_choices(field, 3, False, has_gpu=False)]
        assert not any("GPU" in label for label in labels), labels
        assert "on the GPU" in offload_choices(field, 3, False)[0][1]


def test_nvme_for_the_optimizer_is_offered_at_stage_3_only():
    """DeepSpeed's stages 1-2 keep an 'nvme' optimizer in host RAM: the choice says so below stage 3, and
    the stage note prices those stages with the optimizer in host RAM (marked)."""
    reasons = {stage: dict((v, r) for v, _, r in offload_choices("offload_optimizer", stage, True))
               for stage in range(4)}
    assert reasons[3] == {"none": "", "cpu": "", "nvme": ""}
    assert reasons[1]["nvme"] == reasons[2]["nvme"] == "stage 3 only" and reasons[2]["cpu"] == ""
    plan = starter_plan().with_changes(model="llama-2-7b", stage=3, offload_optimizer="nvme", nvme_path="/tmp")
    note = stage_note(plan, workstation_24gb(), spec_for_plan(plan))
    spec = spec_for_plan(plan)
    two = estimate(plan.with_changes(stage=2, offload_optimizer="cpu"), workstation_24gb(), spec=spec)
    assert f"2: {format_bytes(two.gpu_bytes)}*" in note and "without the offload it cannot have" in note


@pytest.mark.parametrize("hw", [workstation_24gb(), cpu_only()], ids=["one-gpu", "cpu-only"])
def test_the_one_process_stage_note_says_what_the_estimate_says(hw):
    plan = starter_plan().with_changes(model="llama-2-7b")
    spec = spec_for_plan(plan)
    note = stage_note(plan, hw, spec)
    assert "saves nothing" not in note
    attr = "gpu_bytes" if hw.gpu_count else "cpu_bytes"
    for stage in range(4):
        need = getattr(estimate(plan.with_changes(stage=stage), hw, spec=spec), attr)
        assert f"{stage}: {format_bytes(need)}" in note
    two = plan.with_changes(gpus=2) if not hw.gpu_count else None
    if two is not None:
        assert stage_note(two, hw, spec) == ""  # two processes: the stages' own line says what they split


def test_a_blank_description_is_filled_from_the_plan():
    plan = starter_plan().with_changes(model="llama-2-7b", method="lora", precision="bf16", stage=2,
                                       micro_batch=2, grad_accum=8, seq_len=1024)
    assert short_description(plan, spec_for_plan(plan)) == "6.7B LoRA r16, bf16, ZeRO-2, 2×8×1024"


@pilot_test
async def test_saving_a_preset_without_a_description_writes_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.apply_plan(app.state.plan.with_changes(description=""))
        await settle(pilot)
        app.screen.set_focus(None)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("ctrl+a", "ctrl+k", *"mine", "enter")
        await settle(pilot)
    saved = yaml.safe_load(Path(tmp_path / "presets" / "mine.yaml").read_text())
    assert saved["description"].startswith("6.7B full fine-tune, ") and "ZeRO-3" in saved["description"]
