"""Save the plan as a named preset. An existing preset is never overwritten silently: the dialog says
so and asks for an explicit Overwrite."""
from __future__ import annotations

from typing import Optional

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from zerotui.core.errors import ZeroTuiError
from zerotui.core.plan.schema import Plan
from zerotui.tui.common.ordered_input import OrderedInput


class SavePresetScreen(ModalScreen[Optional[str]]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        self.confirm_for: Optional[str] = None  # the name the user agreed to overwrite

    def compose(self) -> ComposeResult:
        with Vertical(id="save-preset", classes="dialog"):
            yield Label("Save this plan as a preset", classes="dialog-title")
            yield OrderedInput(self.plan.name, id="preset-name", placeholder="letters, digits, . _ -")
            yield Static("Saved presets appear in `zerotui presets` and under \"From a preset\".",
                         id="preset-note", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save", id="preset-save", variant="primary", compact=True)
                yield Button("Overwrite", id="preset-overwrite", variant="error", compact=True)
                yield Button("Cancel", id="preset-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#preset-overwrite").display = False
        self.query_one("#preset-name").focus()

    def _note(self, text: str, error: bool = False) -> None:
        note = self.query_one("#preset-note", Static)
        note.update(text)
        note.set_class(error, "error")

    def on_input_changed(self, event: Input.Changed) -> None:
        # A different name needs its own confirmation.
        self.confirm_for = None
        self.query_one("#preset-overwrite").display = False

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.save(overwrite=False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "preset-save":
            self.save(overwrite=False)
        elif event.button.id == "preset-overwrite":
            self.save(overwrite=True)
        else:
            self.dismiss(None)

    def save(self, overwrite: bool) -> None:
        name = self.query_one("#preset-name", Input).value.strip()
        try:
            from zerotui.core.paths import user_presets_dir
            from zerotui.core.plan.presets import save_preset
            plan = self.plan.with_changes(name=name)
            if not plan.description.strip():  # a blank line in the preset list says nothing about it
                from zerotui.tui.wizard.plan_words import short_description
                plan = plan.with_changes(description=short_description(plan, getattr(self.app, "spec", None)))
            exists = any((user_presets_dir() / f"{name}{ext}").exists() for ext in (".yaml", ".yml"))
            if exists and not overwrite:
                self.confirm_for = name
                self.query_one("#preset-overwrite").display = True
                self._note(f"A preset named {name!r} already exists. Overwrite it, or type another name.", True)
                return
            path = save_preset(plan, name, overwrite=overwrite and self.confirm_for == name)
        except ZeroTuiError as err:
            self._note(f"✗ {err.one_line()}", True)
            return
        self.app.notify(f"Saved preset {name!r} to {path}", title="Preset saved", markup=False)
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)
