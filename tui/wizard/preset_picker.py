"""Pick a preset to start from: the built-in scenarios and the user's saved presets, each marked with
whether it fits this machine (``preset_fit``): the list comes at once, the marks as soon as the
estimator has them."""
from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from zerotui.tui.messages import PresetFits, PresetsListed
from zerotui.tui.wizard.host import wizard_host


def preset_label(info: Any, mark: Optional[str] = None) -> Text:
    """Name, where it comes from and whether it fits (a word with every colour, for NO_COLOR); the
    description on a second line."""
    name = getattr(info, "name", str(info))
    desc = getattr(info, "description", "") or ""
    where = "saved" if getattr(info, "builtin", True) is False else "built-in"
    label = Text.assemble((name, "bold"), f"  ({where})  ")
    if mark is None:
        label.append("checking the fit…", style="dim")
    elif mark.startswith("fits"):
        label.append(f"✓ {mark}", style="green")
    else:
        label.append(f"✗ {mark}", style="red" if mark.startswith("needs") else "yellow")
    if desc:
        label.append(f"\n  {desc}", style="dim")
    return label


class PresetPickerScreen(ModalScreen[Optional[str]]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    _presets: tuple[Any, ...] = ()  # what the list shows, to rebuild a label when its fit mark comes

    def compose(self) -> ComposeResult:
        with Vertical(id="presets", classes="dialog"):
            yield Label("Start from a preset (Enter opens its review)", classes="dialog-title")
            yield OptionList(id="preset-options")
            yield Static("", id="preset-error", markup=False)

    def on_mount(self) -> None:
        self.query_one("#preset-options").focus()
        self.list_presets()

    @work(thread=True, exclusive=True, exit_on_error=False, group="presets",
          description="list presets and estimate whether each fits")
    def list_presets(self) -> None:
        from zerotui.core.errors import ZeroTuiError
        try:
            from zerotui.core.plan.presets import list_presets
            message = PresetsListed(list(list_presets()))
        except ZeroTuiError as err:
            message = PresetsListed(error=err.one_line())
        worker = get_current_worker()
        if worker.is_cancelled:
            return
        self.post_message(message)
        from zerotui.tui.wizard.preset_fit import preset_marks
        marks = preset_marks([getattr(p, "name", str(p)) for p in message.presets], wizard_host(self).hardware)
        if not worker.is_cancelled:
            self.post_message(PresetFits(marks))

    def on_presets_listed(self, message: PresetsListed) -> None:
        self._presets = tuple(message.presets)
        options = self.query_one("#preset-options", OptionList)
        options.clear_options()
        options.add_options([Option(preset_label(p), id=getattr(p, "name", str(p))) for p in message.presets])
        if message.error:
            self.query_one("#preset-error", Static).update(f"✗ {message.error}")
        elif not message.presets:
            self.query_one("#preset-error", Static).update("No presets found.")
        if message.presets:
            options.highlighted = 0

    def on_preset_fits(self, message: PresetFits) -> None:
        options = self.query_one("#preset-options", OptionList)
        for p in self._presets:
            name = getattr(p, "name", str(p))
            if name in message.marks:
                options.replace_option_prompt(name, preset_label(p, message.marks[name]))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
