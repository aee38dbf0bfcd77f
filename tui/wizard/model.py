"""Step 1, the model: a local folder, a model from the HF cache, a well-known architecture for planning,
or the built-in tiny model; shows its parameter count and architecture once resolved."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from zerotui.tui.messages import ModelChoicesListed
from zerotui.tui.wizard.step import StepScreen
from zerotui.tui.wizard.field_help import Tick, FieldRow, choice_set, control_id, text_of
from zerotui.tui.common.path_picker import PathPickerScreen
from zerotui.tui.common.ordered_input import OrderedInput


def describe_spec(spec: Any, plan: Any = None) -> str:
    """One line: architecture, exact parameter count and shape (and trainable share with LoRA)."""
    if spec is None:
        return ""
    params = getattr(spec, "params_total", 0) or 0
    size = f"{params / 1e9:.2f} B" if params >= 1e8 else f"{params / 1e6:.2f} M"
    text = (f"{getattr(spec, 'arch', '?')} · {size} parameters ({params:,}) · {spec.num_layers} layers · "
            f"hidden {spec.hidden_size} · {spec.num_heads} heads ({spec.num_kv_heads} KV) · "
            f"vocab {spec.vocab_size:,}")
    if plan is not None and plan.uses_adapters():
        try:
            from zerotui.core.model.spec import lora_trainable_params
            t = lora_trainable_params(spec, plan)
            text += f"\nLoRA trains {t:,} parameters ({t / max(params, 1):.2%})"
        except Exception:  # noqa: BLE001 - the count is a nicety; the budget still shows
            pass
    return text


class ModelScreen(StepScreen):
    STEP = "model"

    def compose_form(self) -> ComposeResult:
        s = self.state
        yield FieldRow("model", OrderedInput(text_of(s.value("model")), id=control_id("model"),
                                      placeholder="tiny, llama-2-7b, /path/to/hf-folder or org/name"),
                       title="Model", extra=[Button("Browse…", id="browse-model", classes="browse")])
        yield Static("", id="model-info", markup=False)
        yield Label("Pick one (Enter):", classes="section-title")
        yield OptionList(id="model-choices")
        yield FieldRow("model_config_path",
                       OrderedInput(text_of(s.value("model_config_path")), id=control_id("model_config_path"),
                             placeholder="optional: config.json to plan with"),
                       title="Config only", extra=[Button("Browse…", id="browse-config", classes="browse")])
        yield FieldRow("attention", choice_set("attention", [("sdpa", "sdpa", ""), ("flash", "flash", ""),
                                                              ("eager", "eager", "")],
                                               s.value("attention"), horizontal=True), title="Attention")
        yield FieldRow("trust_remote_code", Tick(bool(s.value("trust_remote_code")),
                                                   id=control_id("trust_remote_code")), title="Remote code")

    def on_mount(self) -> None:
        super().on_mount()
        self.list_choices()
        self.budget_changed()
        self.query_one(f"#{control_id('model')}", Input).focus()

    @work(thread=True, exclusive=True, exit_on_error=False, group="model-choices",
          description="list built-in, known and cached models")
    def list_choices(self) -> None:
        from zerotui.tui.wizard.model_sources import all_choices
        choices = all_choices()
        if not get_current_worker().is_cancelled:
            self.post_message(ModelChoicesListed(choices))

    def on_model_choices_listed(self, message: ModelChoicesListed) -> None:
        options = self.query_one("#model-choices", OptionList)
        options.clear_options()
        options.add_options([Option(c.label, id=c.value) for c in message.choices])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "model-choices" and event.option.id:
            box = self.query_one(f"#{control_id('model')}", Input)
            box.value = event.option.id  # posts Input.Changed → the Plan and the budget follow

    def on_button_pressed(self, event: Button.Pressed) -> None:
        target = {"browse-model": ("model", "Choose a Hugging Face model folder (has config.json)", "dir"),
                  "browse-config": ("model_config_path", "Choose a config.json", "file")}.get(event.button.id or "")
        if target is None:
            return
        field, title, want = target
        current = self.state.value(field)
        start = Path(str(current)).expanduser() if current and Path(str(current)).expanduser().exists() else None

        def picked(path: Path | None) -> None:
            if path is not None:
                self.query_one(f"#{control_id(field)}", Input).value = str(path)
        self.app.push_screen(PathPickerScreen(title, want=want, start=start,
                                              suffixes=(".json",) if want == "file" else ()), picked)

    def budget_changed(self) -> None:
        super().budget_changed()
        info = self.query_one("#model-info", Static)
        app = self.host
        spec = app.spec
        if app.model_error:
            info.update("")  # the error is on the field it is about
        else:
            info.update(describe_spec(spec, self.state.plan) if spec is not None else "… reading the model")
