"""Keys that arrive in a burst (SSH, tmux, a busy UI thread) land in order in every text and number field
of the wizard: ``512`` then backspace ×3 and ``99`` is ``99``, never ``51``.

The fields are read from the composed wizard steps (every FieldRow whose control is an Input), so a field
added to any step is covered without touching this file.
"""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from wizard_helpers import burst, pilot_test, settle
from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import workstation_24gb
from zerotui.tui.wizard.field_help import FieldRow, control_id, text_of
from zerotui.tui.wizard.state import STEPS, _unwrap_optional, parse_field, starter_plan

#: A plan that shows every conditional row: LoRA's fields, fp16's loss-scale fields, the NVMe folder and
#: the GPU choice (shown on a one-GPU machine once it is set).
EVERY_ROW = starter_plan().with_changes(method="lora", precision="fp16", stage=3, offload_optimizer="nvme",
                                        nvme_path=Path("/tmp/zt-nvme"), gpu_ids=[0])


def _text_fields() -> list[tuple[str, str]]:
    """(step, field) of every wizard field typed into a box, from the screens as they compose."""
    async def collect() -> list[tuple[str, str]]:
        app = ZeroTuiApp(hardware=workstation_24gb())
        found: list[tuple[str, str]] = []
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            app.apply_plan(EVERY_ROW)
            for key, _ in STEPS:
                app.go_to_step(key)
                await settle(pilot)
                found += [(key, row.field) for row in app.screen.query(FieldRow) if isinstance(row.control, Input)]
        return found
    return asyncio.run(collect())


TEXT_FIELDS = _text_fields()


def typed_text(field: str) -> str:
    """A value of the field's kind to type (the final text is checked exactly, valid or not)."""
    tp, _ = _unwrap_optional(Plan.model_fields[field].annotation)
    if tp is int:
        return "1024" if field == "seq_len" else "37"
    if tp is float:
        return "0.25"
    if tp is Path:
        return "/tmp/zt-typed_dir"
    if "list" in str(tp):
        return "0,1" if "int" in str(tp) else "q_proj,v_proj"
    return {"model": "llama-2-7b", "data": "sample"}.get(field, "typed-1")


def keys_for(current: str, text: str) -> list[str]:
    """Clear the box, type all but the first character, go home for the first, then a typo corrected
    at the end: printable keys interleaved with the editing keys that are bindings (end, backspace,
    home), the mix a burst used to reorder."""
    return ["end", *["backspace"] * (len(current) + 1), *text[1:], "home", text[0], "end", "x", "backspace"]


@contextlib.asynccontextmanager
async def on_the_data_step():
    """The wizard on the fake 24 GB workstation, gone to the data step: ``(app, pilot)``."""
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.go_to_step("data")
        await settle(pilot)
        yield app, pilot


def test_the_wizard_has_text_fields_on_every_editing_step():
    steps = {step for step, _ in TEXT_FIELDS}
    assert {"model", "data", "precision", "zero"} <= steps, TEXT_FIELDS
    assert {"seq_len", "lr", "lora_targets", "fp16_hysteresis", "nvme_path", "gpu_ids"} <= {f for _, f in TEXT_FIELDS}


@pytest.mark.parametrize("gap_ms", [0, 10])
@pytest.mark.parametrize(("step", "field"), TEXT_FIELDS, ids=[f"{s}-{f}" for s, f in TEXT_FIELDS])
@pilot_test
async def test_a_burst_of_keys_lands_in_order(step: str, field: str, gap_ms: int):
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.apply_plan(EVERY_ROW)
        app.go_to_step(step)
        await settle(pilot)
        box = app.screen.query_one(f"#{control_id(field)}", Input)
        box.focus()
        await settle(pilot)
        text = typed_text(field)
        await burst(pilot, keys_for(text_of(app.state.value(field)), text), gap_ms / 1000)
        assert app.focused is box, f"focus left {field} while typing"
        assert box.value == text
        expected: Any
        try:
            expected = parse_field(field, text)
        except PlanError:
            expected = text
        assert app.state.value(field) == expected


@pilot_test
async def test_the_reported_sequence_leaves_99_in_the_sequence_length():
    async with on_the_data_step() as (app, pilot):
        box = app.screen.query_one(f"#{control_id('seq_len')}", Input)
        box.focus()
        await burst(pilot, ["end", *["backspace"] * 5, "5", "1", "2"])
        await burst(pilot, ["backspace"] * 3 + ["9", "9"])
        assert box.value == "99" and app.state.plan.seq_len == 99


@pilot_test
async def test_keys_after_a_tab_go_to_the_next_field():
    async with on_the_data_step() as (app, pilot):
        app.screen.query_one(f"#{control_id('seq_len')}", Input).focus()
        await settle(pilot)
        before = app.state.value("seq_len")
        await burst(pilot, ["tab", "3", "backspace", "4"])  # tab selects the next box's text
        assert app.state.value("seq_len") == before
        assert app.screen.query_one(f"#{control_id('micro_batch')}", Input).value == "4"


@pilot_test
async def test_a_value_typed_in_another_spelling_is_left_as_typed():
    async with on_the_data_step() as (app, pilot):
        box = app.screen.query_one(f"#{control_id('seq_len')}", Input)
        box.focus()
        await burst(pilot, ["end", *["backspace"] * 5, *"1_024"])
        assert app.state.plan.seq_len == 1024
        app.screen.show_state()  # what closing the help or a dialog over the step does
        await settle(pilot)
        assert box.value == "1_024" and box.cursor_position == 5
