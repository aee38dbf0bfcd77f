"""The help screen (``?`` or F1): the wizard's steps and every key, in one place."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

INTRO = """\
zerotui plans a DeepSpeed ZeRO fine-tune, checks that it fits this machine, and launches it.

Steps, in accelerate's order: 1 Model · 2 Data & method · 3 Precision · 4 ZeRO & offload · 5 Review. \
The memory budget under every step follows each change: GPU, CPU RAM and NVMe, need against \
capacity, with a word beside each bar: OK, TIGHT (over 90 %), OVER.
"""

KEYS = [
    ("ctrl+n", "next step"),
    ("escape", "previous step (from step 1: the hardware screen)"),
    ("1 … 5", "jump to a step (outside text boxes; tab leaves one), or click the step bar"),
    ("ctrl+r", "go to the review"),
    ("ctrl+g", "Fit: apply the fastest plan that fits; alternatives to pick; u undoes"),
    ("b", "show or hide the memory breakdown (or click the budget)"),
    ("tab", "next field (shift+tab: previous); arrows move in a list, enter/space choose"),
    ("l  s  e", "on the review: launch, save preset, export"),
    ("c  y", "on the review: copy ds_config.json, copy the launch command"),
    ("ctrl+p", "command palette: every action by name"),
    ("ctrl+t", "change the colour theme"),
    ("? / f1", "this help"),
    ("ctrl+q", "quit (a launched run keeps training; `zerotui attach` reopens it)"),
]

OUTRO = "NO_COLOR=1 gives a colourless screen; every colour also has a word or mark beside it."


def help_text() -> str:
    width = max(len(k) for k, _ in KEYS)
    keys = "\n".join(f"  {k:<{width}}  {what}" for k, what in KEYS)
    return f"{INTRO}\n{keys}\n\n{OUTRO}"


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help", classes="dialog"):
            yield Label("zerotui: help", classes="dialog-title")
            with VerticalScroll():
                yield Static(help_text(), markup=False)
            yield Button("Close", id="help-close", variant="primary", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
