"""Pick a preset to start from: the built-in scenarios and the user's saved presets."""
from __future__ import annotations

from typing import Any, Optional

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from zerotui.tui.messages import PresetsListed


def preset_label(info: Any) -> str:
    name = getattr(info, "name", str(info))
    desc = getattr(info, "description", "") or ""
    where = "saved" if getattr(info, "builtin", True) is False else "built-in"
    return f"{name}  ({where})" + (f": {desc}" if desc else "")


class PresetPickerScreen(ModalScreen[Optional[str]]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="presets", classes="dialog"):
            yield Label("Start from a preset (Enter opens its review)", classes="dialog-title")
            yield OptionList(id="preset-options")
            yield Static("", id="preset-error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#preset-options").focus()
        self.list_presets()

    @work(thread=True, exclusive=True, exit_on_error=False, group="presets", description="list presets")
    def list_presets(self) -> None:
        from zerotui.core.errors import ZeroTuiError
        try:
            from zerotui.core.plan.presets import list_presets
            message = PresetsListed(list(list_presets()))
        except ZeroTuiError as err:
            message = PresetsListed(error=err.one_line())
        if not get_current_worker().is_cancelled:
            self.post_message(message)

    def on_presets_listed(self, message: PresetsListed) -> None:
        options = self.query_one("#preset-options", OptionList)
        options.clear_options()
        options.add_options([Option(preset_label(p), id=getattr(p, "name", str(p))) for p in message.presets])
        if message.error:
            self.query_one("#preset-error", Static).update(f"✗ {message.error}")
        elif not message.presets:
            self.query_one("#preset-error", Static).update("No presets found.")
        if message.presets:
            options.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
