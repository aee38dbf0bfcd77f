"""One wizard field: a label, its control, the field's one-line help, and its error when there is one.

The help text is the Plan field's own description (``core.plan.schema.field_help``), so the wizard, the CLI's
``--help`` and plan files all say the same thing. Controls carry ``id="f-<field>"``; the step screens
map widget events back to Plan fields through that id alone.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.content import Content
from textual.widgets import Checkbox, Input, Label, RadioButton, RadioSet, Select, Static

from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import field_help
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.wizard.state import SIZE_FIELDS, parse_field

CONTROL_PREFIX = "f-"


def control_id(field: str) -> str:
    return CONTROL_PREFIX + field


def field_of(widget: Widget) -> Optional[str]:
    wid = widget.id or ""
    return wid[len(CONTROL_PREFIX):] if wid.startswith(CONTROL_PREFIX) else None


def text_of(value: Any) -> str:
    """How a Plan value is written into an Input (lists with commas, None as empty)."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def size_text(n: int) -> str:
    """Bytes as the largest binary unit that holds them exactly (``24GiB``, ``1536MiB``), so the text
    parses back to the same number; a size in no whole unit stays in bytes."""
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def field_text(field: str, value: Any) -> str:
    """``text_of`` for a given field: a size field shows its bytes as a size people type."""
    if field in SIZE_FIELDS and isinstance(value, int) and not isinstance(value, bool):
        return size_text(value)
    return text_of(value)


def _means(field: str, text: str, value: Any) -> bool:
    """Whether the text in a box already stands for ``value`` ("1_024" for 1024, "2e-5" for 2e-05): then
    it stays as the user typed it, cursor and all, instead of being rewritten in the canonical form."""
    try:
        return parse_field(field, text) == value
    except (PlanError, KeyError):
        return False


class Choice(RadioButton):
    """A radio button that remembers the Plan value it stands for (``value`` is its on/off state).

    Textual draws the same ● for on and off and tells them apart by colour only; here the mark itself
    changes (● chosen, blank not), so NO_COLOR and colour-blind users see the choice too.
    """

    def __init__(self, label: str, choice: Any, disabled_reason: str = "") -> None:
        super().__init__(label, disabled=bool(disabled_reason))
        self.choice = choice
        if disabled_reason:
            self.tooltip = disabled_reason

    @property
    def _button(self) -> Content:
        self.BUTTON_INNER = "●" if self.value else " "
        return super()._button


class Tick(Checkbox):
    """An on/off field drawn as [✓] on / [ ] off (the mark, not only its colour, shows the state)."""

    def __init__(self, value: bool, id: str) -> None:
        super().__init__("on" if value else "off", value, id=id)

    @property
    def _button(self) -> Content:
        self.BUTTON_INNER = "✓" if self.value else " "
        return super()._button

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self.label = "on" if event.value else "off"


def choice_set(field: str, options: Sequence[tuple[Any, str, str]], current: Any,
               horizontal: bool = False) -> RadioSet:
    """A RadioSet for a field; ``options`` are (value, label, why-disabled or "")."""
    buttons = []
    for value, label, reason in options:
        b = Choice(label + ("  (unavailable)" if reason else ""), value, reason)
        b.value = value == current
        buttons.append(b)
    rs = RadioSet(*buttons, id=control_id(field))
    if horizontal:
        rs.add_class("horizontal")
    return rs


class FieldRow(Vertical):
    """Label + control on one line, help under it, and the error (hidden until there is one)."""

    DEFAULT_CLASSES = "field-row"

    def __init__(self, field: str, control: Widget, title: Optional[str] = None,
                 help: Optional[str] = None, extra: Iterable[Widget] = ()) -> None:
        super().__init__(id=f"row-{field}")
        self.field = field
        self.control = control
        self.title = title or field.replace("_", " ").capitalize()
        self.help_text = help if help is not None else in_tui_words(field_help(field))
        self.extra = list(extra)
        # Borderless controls: one line per field is what lets a whole step read at 80×24.
        for widget in (control, *self.extra):
            if hasattr(widget, "compact"):
                widget.compact = True

    def compose(self) -> ComposeResult:
        with Horizontal(classes="field-line"):
            yield Label(self.title, classes="field-label")
            yield self.control
            yield from self.extra
        yield Static(self.help_text, classes="field-help", markup=False)
        yield Static("", classes="field-error", markup=False)

    def set_error(self, message: str) -> None:
        self.set_class(bool(message), "has-error")
        self.control.set_class(bool(message), "-invalid")
        self.query_one(".field-error", Static).update(f"✗ {in_tui_words(message)}" if message else "")

    def show_value(self, value: Any) -> None:
        """Put a Plan value into the control without posting a change (no feedback loop)."""
        c = self.control
        if isinstance(c, Input):
            text = field_text(self.field, value)
            if c.value != text and not _means(self.field, c.value, value):
                with c.prevent(Input.Changed):
                    c.value = text
        elif isinstance(c, Checkbox):
            if c.value != bool(value):
                c.value = bool(value)  # its Changed echo is dropped by the step (value unchanged)
        elif isinstance(c, Select):
            if c.value != value:
                with c.prevent(Select.Changed):
                    c.value = value
        elif isinstance(c, RadioSet):
            # Pressing the matching button lets the RadioSet turn the others off and keep its own
            # bookkeeping; the RadioSet.Changed that follows is dropped by the step screen because
            # the value equals the Plan's already.
            for b in c.query(Choice):
                if b.choice == value and not b.value:
                    b.value = True
