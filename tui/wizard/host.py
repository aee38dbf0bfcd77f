"""The seams between the App and the wizard's screens, as typed Protocols.

``WizardHost`` is what a wizard screen may use of the App it runs in (``ZeroTuiApp`` implements it);
``wizard_host(node)`` returns the node's App as one. The App tells the screens on its stack about new
hardware, a replaced plan and a new budget through the ``Shows*`` protocols, which a screen implements
when it shows that (checked with ``isinstance``, never by attribute name).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Protocol, runtime_checkable

from textual.dom import DOMNode

from zerotui.core.hardware.types import Hardware
from zerotui.tui.wizard.budget_bar import BudgetView
from zerotui.tui.wizard.state import WizardState


@runtime_checkable
class WizardHost(Protocol):
    hardware: Optional[Hardware]
    hardware_error: str
    runs_dir: Optional[Path]
    state: WizardState
    budget_view: BudgetView
    model_error: str
    model_error_field: str
    spec: Any                       # the current model's ModelSpec, once resolved

    def update_field(self, name: str, value: Any) -> None: ...
    def launch_blockers(self) -> tuple[list[str], list[str]]: ...
    def action_launch(self, anyway: bool = False) -> None: ...
    def go_to_step(self, key: str) -> None: ...


def wizard_host(node: DOMNode) -> WizardHost:
    app = node.app
    if not isinstance(app, WizardHost):
        raise TypeError(f"{type(node).__name__} runs only inside the zerotui App, not {type(app).__name__}")
    return app


@runtime_checkable
class ShowsHardware(Protocol):
    def show_hardware(self, hw: Hardware, error: str = "") -> None: ...


@runtime_checkable
class ShowsPlan(Protocol):
    def show_state(self) -> None: ...


@runtime_checkable
class ShowsBudget(Protocol):
    def budget_changed(self) -> None: ...
