"""The row of step names at the top of every wizard step: where you are, and a click (or a digit) away
from any other step."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label

from zerotui.tui.wizard.state import STEPS


class StepLink(Label):
    def __init__(self, number: int, key: str, title: str, current: bool) -> None:
        # The current step is marked by ▸ as well as by colour (readable under NO_COLOR).
        super().__init__(f"{'▸' if current else ' '}{number} {title} ", id=f"step-{key}", classes="step-link")
        self.key = key
        self.set_class(current, "current")

    def on_click(self) -> None:
        self.app.go_to_step(self.key)  # type: ignore[attr-defined]


class StepBar(Horizontal):
    def __init__(self, current: str) -> None:
        super().__init__(id="step-bar")
        self.current = current

    def compose(self) -> ComposeResult:
        for i, (key, title) in enumerate(STEPS, 1):
            if i > 1:
                yield Label("›", classes="step-sep")
            yield StepLink(i, key, title, key == self.current)
