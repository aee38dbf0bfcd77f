"""The help screen (``?`` or F1): the keys of the screen it was opened from, and the App's own.

The lists are built from the ``BINDINGS`` of that screen's classes and of the App, so the help can never
drift from what the keys really do: a binding added to a screen shows up here by itself. Each class that
adds keys names its group with ``HELP_TITLE`` and may say what its screen is for with ``HELP_INTRO``;
a binding's ``tooltip`` is its longer explanation here.
"""
from __future__ import annotations

from typing import Optional

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Label, Static

#: The group of every key that is not a screen's own: the App's, and Textual's on every screen.
EVERYWHERE = "Everywhere"
ON_THIS_SCREEN = "On this screen"

OUTRO = "NO_COLOR=1 gives a colourless screen; every colour also has a word or mark beside it."


def _class_bindings(node: DOMNode) -> list[tuple[str, list[Binding]]]:
    """(group title, bindings) per class of ``node`` that declares BINDINGS, most derived first. A screen
    class of ours without a HELP_TITLE (a dialog) is "On this screen"; Textual's own classes and the
    App's are "Everywhere"."""
    out = []
    for cls in type(node).__mro__:
        if "BINDINGS" not in cls.__dict__:
            continue
        bindings = [b for b in Binding.make_bindings(cls.__dict__["BINDINGS"]) if not b.system]
        ours = isinstance(node, Screen) and cls.__module__.startswith("zerotui.")
        out.append((cls.__dict__.get("HELP_TITLE") or (ON_THIS_SCREEN if ours else EVERYWHERE), bindings))
    return out


def _extra(app: App) -> list[Binding]:
    """Keys Textual adds at run time rather than in a BINDINGS list: the command palette."""
    if not app.ENABLE_COMMAND_PALETTE:
        return []
    return [Binding(app.COMMAND_PALETTE_BINDING, "command_palette", "Command palette",
                    tooltip="every action by name, with a search box")]


def binding_groups(screen: Screen, app: App) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(group title, [(keys, what they do)])], the screen's groups first, then "Everywhere".

    A key bound twice (a screen overriding the App) is listed once, where it takes effect; keys of one
    action (``d`` and ``q``) share a line, and so do keys of one kind of action with one tooltip (the
    digits that jump to a step or a pane)."""
    groups: dict[str, dict[tuple[str, str], list]] = {}
    seen: set[str] = set()
    sources = _class_bindings(screen) + _class_bindings(app) + [(EVERYWHERE, _extra(app))]
    for title, bindings in sources:
        lines = groups.setdefault(title, {})
        for b in bindings:
            if b.key in seen:
                continue
            seen.add(b.key)
            base = b.action.split("(")[0]
            key = (base, b.tooltip) if "(" in b.action and b.tooltip else (b.action, b.description)
            keys, descriptions, tooltip = lines.setdefault(key, [[], [], b.tooltip])
            keys.append(app.get_key_display(b))
            if b.description not in descriptions:
                descriptions.append(b.description)
    out = []
    for title, lines in groups.items():
        rows = []
        for keys, descriptions, tooltip in lines.values():
            what = " · ".join(d for d in descriptions if d)
            rows.append((" ".join(keys), f"{what}: {tooltip}" if tooltip and what else what or tooltip))
        if rows:
            out.append((title, rows))
    # "Everywhere" last, wherever the App's classes put it in the walk.
    out.sort(key=lambda group: group[0] == EVERYWHERE)
    return out


def help_content(screen: Screen, app: App) -> Group:
    """The screen's intro, then each group of keys as a table: a long explanation wraps under itself."""
    parts: list = []
    intro = _intro(screen)
    if intro:
        parts += [Text(intro), Text("")]
    for title, rows in binding_groups(screen, app):
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True, style="bold")
        table.add_column()
        for keys, what in rows:
            table.add_row(keys, what)
        parts += [Text(title, style="bold underline"), Padding(table, (0, 0, 0, 2)), Text("")]
    parts.append(Text(OUTRO, style="dim"))
    return Group(*parts)


def _intro(screen: Screen) -> Optional[str]:
    for cls in type(screen).__mro__:
        if cls.__dict__.get("HELP_INTRO"):
            return str(cls.__dict__["HELP_INTRO"]).strip()
    return None


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def __init__(self, source: Optional[Screen] = None) -> None:
        super().__init__()
        self.source = source

    def compose(self) -> ComposeResult:
        source = self.source if self.source is not None else self.app.screen
        title = getattr(source, "HELP_TITLE", None) or "zerotui"
        with Vertical(id="help", classes="dialog"):
            yield Label(f"Help: {title}", classes="dialog-title")
            with VerticalScroll():
                yield Static(help_content(source, self.app), id="help-text")
            yield Button("Close", id="help-close", variant="primary", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)

