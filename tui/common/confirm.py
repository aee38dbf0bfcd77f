"""A yes / no question before a destructive action (stopping a run, resuming a lost one)."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True for yes (y, or the yes button) and False for no (n, escape)."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > #confirm {
        width: 64; max-width: 95%; height: auto;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmScreen #confirm-title { text-style: bold; margin-bottom: 1; }
    ConfirmScreen #confirm-buttons { height: auto; margin-top: 1; }
    ConfirmScreen #confirm-buttons Button { margin-right: 2; }
    """
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, title: str, message: str, yes: str = "Yes", no: str = "Cancel") -> None:
        super().__init__()
        self.title_text, self.message, self.yes, self.no = title, message, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label(self.title_text, id="confirm-title")
            yield Static(self.message, id="confirm-message", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes} (y)", id="confirm-yes", variant="error")
                yield Button(f"{self.no} (n)", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()  # the safe answer is the default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
