"""The Fit dialog: the recommender's best plan has been applied; this shows what changed and why, and
lists the alternatives (fastest first) to pick instead, or Undo."""
from __future__ import annotations

from typing import Any, Optional

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, OptionList, Static
from textual.widgets.option_list import Option

from zerotui.core.plan.schema import Plan
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.messages import FitReady


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    return "—" if value is None else str(value)


def changes_text(rec: Any) -> str:
    """'field: old → new' per changed field, aligned (plain text: readable under NO_COLOR, testable)."""
    changes = getattr(rec, "changes", {}) or {}
    if not changes:
        return "Nothing changes: the plan already fits as it is."
    width = max(len(f) for f in changes)
    return "\n".join(f"  {f:<{width}}  {_fmt(old)} → {_fmt(new)}" for f, (old, new) in changes.items())


class FitScreen(ModalScreen[Optional[int]]):
    """Dismisses with the index of the chosen alternative, -1 for Undo, None to keep what is applied."""

    BINDINGS = [Binding("escape", "keep", "Keep"), Binding("u", "undo", "Undo")]

    def __init__(self, original: Plan, result: FitReady, applied: Optional[int]) -> None:
        super().__init__()
        self.original = original
        self.result = result
        self.applied = applied

    def compose(self) -> ComposeResult:
        recs = self.result.recommendations
        with Vertical(id="fit", classes="dialog"):
            if self.result.error or not recs:
                yield Label("Nothing fits this machine", classes="dialog-title")
                reasons = [self.result.error] if self.result.error else (self.result.why_not or ["no reason given"])
                yield Static("\n".join(f"• {in_tui_words(r)}" for r in reasons), id="fit-why", markup=False)
                with Horizontal(classes="dialog-buttons"):
                    yield Button("Close", id="fit-keep", variant="primary", compact=True)
                return
            yield Label("Fit: applied the fastest plan that fits", classes="dialog-title")
            yield Static("", id="fit-reason", markup=False)
            yield Static("", id="fit-changes", markup=False)
            yield Static("", id="fit-budget", markup=False)
            yield Label("Alternatives, fastest first (Enter applies):", classes="section-title")
            yield OptionList(*[Option(self._label(i, r), id=str(i)) for i, r in enumerate(recs)], id="fit-options")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Keep", id="fit-keep", variant="primary", compact=True)
                yield Button("Undo  u", id="fit-undo", compact=True)

    @staticmethod
    def _label(i: int, rec: Any) -> str:
        speed = getattr(rec, "relative_speed", None)
        speed_s = f"{speed:.2f}× speed" if isinstance(speed, (int, float)) else ""
        return f"{i + 1}. {speed_s}  {rec.reason}"

    def on_mount(self) -> None:
        if self.result.recommendations:
            options = self.query_one("#fit-options", OptionList)
            options.highlighted = self.applied or 0
            self._show(self.applied or 0)
            options.focus()

    def _show(self, index: int) -> None:
        rec = self.result.recommendations[index]
        applied = " (applied)" if index == self.applied else " (Enter to apply instead)"
        self.query_one("#fit-reason", Static).update(f"Why: {rec.reason}{applied}")
        self.query_one("#fit-changes", Static).update("Changes:\n" + changes_text(rec))
        self.query_one("#fit-budget", Static).update("Needs: " + rec.budget.summary("  ·  "))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self._show(int(event.option.id))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        index = int(event.option.id or 0)
        self.dismiss(None if index == self.applied else index)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "fit-undo":
            self.action_undo()
        else:
            self.action_keep()

    def action_keep(self) -> None:
        self.dismiss(None)

    def action_undo(self) -> None:
        self.dismiss(-1 if self.applied is not None else None)
