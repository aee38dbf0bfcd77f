"""A modal for failures the user must read (a run that could not start): what went wrong and what
would work (transient problems are notifications, failures a modal)."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from zerotui.tui.common.tui_words import in_tui_words


class ErrorScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter", "close", "Close")]

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__()
        # Core's hints name CLI flags; here the same advice names the TUI's buttons and fields.
        self.title_text, self.message, self.hint = title, in_tui_words(message), in_tui_words(hint)

    def compose(self) -> ComposeResult:
        with Vertical(id="error", classes="dialog"):
            yield Label(f"✗ {self.title_text}", classes="dialog-title")
            yield Static(self.message, id="error-message", markup=False)
            if self.hint:
                yield Static(f"What would work: {self.hint}", id="error-hint", markup=False)
            yield Button("Close", id="error-close", variant="primary", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
