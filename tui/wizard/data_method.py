"""Step 2, data and method: the dataset (with a preview of its first rows and the detected format),
full fine-tuning or LoRA, and the batch, sequence and schedule numbers."""
from __future__ import annotations

import time
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Button, DataTable, Input, Select, Static
from textual.worker import get_current_worker

from zerotui.core.data.files import SUFFIXES
from zerotui.tui.messages import DataPreviewReady
from zerotui.tui.wizard.step import StepScreen
from zerotui.tui.wizard.field_help import FieldRow, choice_set, control_id, text_of
from zerotui.tui.common.path_picker import PathPickerScreen
from zerotui.tui.common.table_fill import fill_table
from zerotui.tui.common.ordered_input import OrderedInput

#: Typing a path fires a preview per key press; wait for a pause in typing first.
PREVIEW_DEBOUNCE_S = 0.3
FORMATS = ["auto", "text", "alpaca", "chat", "prompt_response"]
DATA_SUFFIXES = SUFFIXES  # the picker offers what training reads (core/data/files.py)


def load_preview(source, plan):
    """The first rows and the format training will use. ``core.data.prepare`` reads whole files, too slow
    for a picker, so tui/wizard/data_preview.py reads only the first rows (of every entry of a mix)."""
    from zerotui.tui.wizard.data_preview import preview
    return preview(source.strip() if isinstance(source, str) else source, plan)


class DataMethodScreen(StepScreen):
    STEP = "data"
    #: Why the dataset cannot be read (from its preview), shown on the Dataset field itself.
    data_error: str = ""

    def field_errors(self) -> dict[str, str]:
        errors = super().field_errors()
        if self.data_error and "data" not in errors:
            errors["data"] = self.data_error
        return errors

    def compose_form(self) -> ComposeResult:
        s = self.state

        def num(field: str, title: str) -> FieldRow:
            return FieldRow(field, OrderedInput(text_of(s.value(field)), id=control_id(field)), title=title)

        yield FieldRow("data", OrderedInput(text_of(s.value("data")), id=control_id("data"),
                                     placeholder="sample, /path/to/train.jsonl or hub:org/name"),
                       title="Dataset", extra=[Button("Browse…", id="browse-data", classes="browse")])
        yield Static("", id="data-format-note", markup=False)
        yield DataTable(id="data-preview", show_cursor=False, zebra_stripes=True)
        yield FieldRow("data_format", Select([(f, f) for f in FORMATS], value=s.value("data_format"),
                                             allow_blank=False, id=control_id("data_format")), title="Row format")
        yield FieldRow("method", choice_set("method", [("full", "full fine-tune", ""), ("lora", "LoRA", ""),
                                                       ("qlora", "QLoRA (4-bit base)", "")],
                                            s.value("method"), horizontal=True), title="Method")
        with Vertical(id="qlora-fields"):
            yield FieldRow("quant_bits", choice_set("quant_bits", [(4, "4-bit", ""), (8, "8-bit", "")],
                                                    s.value("quant_bits"), horizontal=True), title="Base weights")
        with Vertical(id="lora-fields"):
            yield num("lora_r", "LoRA rank r")
            yield num("lora_alpha", "LoRA alpha")
            yield FieldRow("lora_targets", OrderedInput(text_of(s.value("lora_targets")), id=control_id("lora_targets")),
                           title="LoRA targets")
            yield num("lora_dropout", "LoRA dropout")
        yield num("seq_len", "Sequence length")
        yield num("micro_batch", "Micro-batch")
        yield num("grad_accum", "Accumulation")
        yield Static("", id="global-batch", classes="derived", markup=False)
        yield num("epochs", "Epochs")
        yield FieldRow("max_steps", OrderedInput(text_of(s.value("max_steps")), id=control_id("max_steps"),
                                          placeholder="empty: run the epochs"), title="Max steps")
        yield num("lr", "Learning rate")

    def on_mount(self) -> None:
        super().on_mount()
        self.refresh_derived()
        self.preview(self.state.value("data"), delay=0.0, plan=self.state.plan)
        self.query_one(f"#{control_id('data')}", Input).focus()

    def refresh_derived(self) -> None:
        plan = self.state.plan
        self.query_one("#lora-fields").display = self.state.value("method") in ("lora", "qlora")
        self.query_one("#qlora-fields").display = self.state.value("method") == "qlora"
        hw = self.host.hardware
        gpus = hw.gpu_count if hw is not None else 0
        world = plan.world_size(gpus)
        if any(f in self.state.errors for f in ("micro_batch", "grad_accum", "seq_len")):
            # The last valid plan's numbers ("999 × 1" under a Micro-batch of 99999999) would contradict the box.
            self.query_one("#global-batch", Static).update("")
            return
        self.query_one("#global-batch", Static).update(
            f"= {plan.train_batch(gpus)} sequences per optimizer step "
            f"({plan.micro_batch} × {plan.grad_accum} × {world} {'GPUs' if gpus else 'process'}),"
            f" {plan.train_batch(gpus) * plan.seq_len:,} tokens")

    def on_input_changed(self, event: Input.Changed) -> None:
        super().on_input_changed(event)
        if event.input.id == control_id("data"):
            self.preview(event.value, delay=PREVIEW_DEBOUNCE_S, plan=self.state.plan)

    def on_select_changed(self, event: Select.Changed) -> None:
        super().on_select_changed(event)
        if event.select.id == control_id("data_format"):  # the detected format depends on it
            self.preview(str(self.state.value("data")), delay=0.0, plan=self.state.plan)

    @work(thread=True, exclusive=True, exit_on_error=False, group="data-preview",
          description="read the first rows of the dataset")
    def preview(self, source, delay: float, plan=None) -> None:
        worker = get_current_worker()
        time.sleep(delay)
        if worker.is_cancelled:
            return
        from zerotui.core.errors import ZeroTuiError
        try:
            message = DataPreviewReady(str(source), load_preview(source, plan))  # a mix (list) by its text
        except ZeroTuiError as err:
            message = DataPreviewReady(str(source), error=err.one_line())
        if not worker.is_cancelled:
            self.post_message(message)

    def on_data_preview_ready(self, message: DataPreviewReady) -> None:
        note = self.query_one("#data-format-note", Static)
        table = self.query_one("#data-preview", DataTable)
        fill_table(table, [], [])
        if message.source.strip() != str(self.state.value("data")).strip():
            return  # a preview of what the field held a few keys ago
        self.data_error = message.error
        self.show_errors()
        if message.error:
            note.update("")
            note.set_class(False, "error")
            table.display = False
            return
        p = message.preview
        note.set_class(p.format == "unknown" and bool(p.note), "error")
        fmt = p.format if p.format != "unknown" else "not recognised"
        note.update(f"Detected format: {fmt}" + (f" ({p.note})" if p.note else "")
                    + (f"   first {len(p.rows)} rows:" if p.rows else ""))
        table.display = bool(p.rows)
        if p.rows:
            fill_table(table, p.columns, p.rows)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id != "browse-data":
            return
        current = str(self.state.value("data"))
        start = Path(current).expanduser() if current and Path(current).expanduser().exists() else None

        def picked(path: Path | None) -> None:
            if path is not None:
                self.query_one(f"#{control_id('data')}", Input).value = str(path)
        self.app.push_screen(PathPickerScreen("Choose a dataset file", want="file", start=start,
                                              suffixes=DATA_SUFFIXES), picked)

