"""Bad input typed into the wizard (the TUI side of the bad-input corpus): the same mistakes the CLI corpus
(tests/unit/test_bad_input_corpus.py) feeds `zerotui`, typed key by key. Each must show an inline error on the
field it is about, keep Launch disabled with the reason, start nothing when `l` is pressed anyway, and
raise nothing in the app."""
from __future__ import annotations

from places import CORPUS
import shutil
from pathlib import Path

import pytest
from textual.widgets import Button, Static

from wizard_helpers import fill, pilot_test, settle, step  # noqa: E402
from zerotui.tui.app import ZeroTuiApp  # noqa: E402
from zerotui.tui.wizard.demo_hardware import cpu_only  # noqa: E402
from zerotui.tui.wizard.field_help import FieldRow  # noqa: E402


SIZE = (120, 40)



@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def field_error(app, field: str) -> str:
    row = next(r for r in app.screen.query(FieldRow) if r.field == field)
    return str(row.query_one(".field-error", Static).render()) if row.has_class("has-error") else ""


async def review_refuses(pilot, app, runs: Path, *words: str) -> None:
    """On the review: Launch disabled with the reason; `l` anyway starts nothing."""
    await pilot.press("ctrl+r")
    await settle(pilot)
    assert step(pilot) == "review"
    status = str(app.screen.query_one("#launch-status", Static).render())
    assert app.screen.query_one("#launch", Button).disabled, status
    assert "Launch is disabled" in status
    for w in words:
        assert w in status, (w, status)
    await pilot.press("l")
    await settle(pilot)
    assert step(pilot) == "review"  # no dashboard
    assert not runs.exists() or not any(runs.iterdir())


async def _wizard(tmp_path, body) -> None:
    runs = tmp_path / "runs"
    app = ZeroTuiApp(hardware=cpu_only(), runs_dir=runs)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert step(pilot) == "model"
        await body(pilot, app, runs)
    assert app.return_code in (None, 0) and app._exception is None


@pilot_test
async def test_negative_micro_batch_is_an_inline_error_and_blocks_launch(tmp_path):
    async def body(pilot, app, runs):
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert step(pilot) == "data"
        await fill(pilot, "micro_batch", "-1")
        assert "greater than or equal to 1" in field_error(app, "micro_batch")
        await fill(pilot, "seq_len", "lots")
        assert "not a whole number" in field_error(app, "seq_len")
        await review_refuses(pilot, app, runs, "micro_batch")
    await _wizard(tmp_path, body)


@pilot_test
async def test_unknown_model_is_an_inline_error_and_blocks_launch(tmp_path):
    async def body(pilot, app, runs):
        await fill(pilot, "model", "no-such-model")
        assert "not a known architecture" in field_error(app, "model")
        await review_refuses(pilot, app, runs, "no-such-model")
    await _wizard(tmp_path, body)


@pilot_test
async def test_model_folder_without_weights_blocks_launch(tmp_path):
    folder = tmp_path / "no_weights"
    shutil.copytree(CORPUS / "models" / "no_weights", folder)

    async def body(pilot, app, runs):
        await fill(pilot, "model", str(folder))
        # Planning works from config.json alone (the budget shows); training needs the weights.
        assert field_error(app, "model") == ""
        await review_refuses(pilot, app, runs, "no weights")
    await _wizard(tmp_path, body)


@pilot_test
async def test_missing_data_file_is_an_inline_error_and_blocks_launch(tmp_path):
    async def body(pilot, app, runs):
        await pilot.press("ctrl+n")
        await settle(pilot)
        await fill(pilot, "data", str(tmp_path / "nope.jsonl"))
        await pilot.pause(0.5)  # the preview waits for a pause in typing
        await settle(pilot)
        assert "nope.jsonl" in field_error(app, "data")
        await review_refuses(pilot, app, runs, "nope.jsonl", "does not exist")
    await _wizard(tmp_path, body)


@pilot_test
async def test_data_file_with_no_usable_rows_blocks_launch(tmp_path):
    bad = tmp_path / "empty_outputs.jsonl"
    shutil.copy(CORPUS / "data" / "empty_outputs.jsonl", bad)

    async def body(pilot, app, runs):
        await pilot.press("ctrl+n")
        await settle(pilot)
        await fill(pilot, "data", str(bad))
        await pilot.pause(0.5)
        await settle(pilot)
        await review_refuses(pilot, app, runs, "no usable alpaca rows")
    await _wizard(tmp_path, body)


@pilot_test
async def test_a_fixed_mistake_unblocks_launch(tmp_path):
    """The check must not stick: the same field corrected makes the plan launchable again."""
    async def body(pilot, app, runs):
        await pilot.press("ctrl+n")
        await settle(pilot)
        await fill(pilot, "data", str(tmp_path / "nope.jsonl"))
        await pilot.pause(0.5)
        await settle(pilot)
        await fill(pilot, "data", "sample")
        await pilot.pause(0.5)
        await settle(pilot)
        assert field_error(app, "data") == ""
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert not app.screen.query_one("#launch", Button).disabled
        assert "Ready to launch" in str(app.screen.query_one("#launch-status", Static).render())
    await _wizard(tmp_path, body)


@pilot_test
async def test_a_dataset_with_chat_markers_previews_its_text_as_written(tmp_path):
    """Llama-2 chat data holds "[INST] ... [/INST]", which Rich reads as markup: the preview table raised
    MarkupError ("closing tag '[/INST]' ... doesn't match any open tag") as it drew, and "[red]" was eaten."""
    data = tmp_path / "chat.jsonl"
    data.write_text("".join(f'{{"text": "<s>[INST] question {i} [/INST] [red]answer {i}</s>"}}\n' for i in range(8)))

    async def body(pilot, app, runs):
        from textual.widgets import DataTable

        await pilot.press("ctrl+n")
        await settle(pilot)
        await fill(pilot, "data", str(data))
        await pilot.pause(0.5)  # the preview waits for a pause in typing
        await settle(pilot)
        table = app.screen.query_one("#data-preview", DataTable)
        drawn = "\n".join(table.render_line(y).text for y in range(3))
        assert "<s>[INST] question 0 [/INST] [red]answer 0</s>" in drawn, drawn
    await _wizard(tmp_path, body)


@pilot_test
async def test_a_model_typed_with_brackets_is_named_in_the_budget_as_typed(tmp_path):
    """The budget's status line quotes what the model field holds; as markup, "[/x]" raised MarkupError."""
    async def body(pilot, app, runs):
        from textual.widgets import Label

        await fill(pilot, "model", "a[/x]b")
        await pilot.pause(0.3)
        await settle(pilot)
        status = str(app.screen.query_one("#budget-status", Label).render())
        assert "a[/x]b" in status, status
        # the review quotes it as typed too (its toast is checked in tests/unit/test_toast_markup.py)
        await review_refuses(pilot, app, runs, "a[/x]b")
    await _wizard(tmp_path, body)
