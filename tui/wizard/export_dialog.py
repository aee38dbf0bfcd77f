"""Export: write ds_config.json and launch.sh for the plain ``deepspeed`` CLI, exactly what
``zerotui export`` writes (both call the same function)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from zerotui.core.errors import ZeroTuiError
from zerotui.core.plan.schema import Plan
from zerotui.tui.wizard.host import wizard_host
from zerotui.tui.common.ordered_input import OrderedInput


def export_plan(plan: Plan, out_dir: Path, hardware: Any, force: bool = False) -> str:
    """Write what ``zerotui export`` writes (the same core function); returns its summary. GPUs are sized
    for the wizard's hardware, which may be stated rather than detected."""
    from zerotui.core.export.deepspeed_cli import export_plan as write_export

    detected = hardware.gpu_count if hardware is not None else 0
    return write_export(plan, out_dir, f"the wizard (plan '{plan.name}')", force=force,
                        detected_gpus=detected).summary()


class ExportScreen(ModalScreen[Optional[Path]]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="export", classes="dialog"):
            yield Label("Export ds_config.json, plan.yaml and launch.sh", classes="dialog-title")
            yield OrderedInput(str(Path.cwd() / f"{self.plan.name}-export"), id="export-dir")
            yield Static("The folder is created if needed; files already there are not replaced unless you say so.",
                         id="export-note", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", id="export-go", variant="primary", compact=True)
                yield Button("Replace them", id="export-force", variant="error", compact=True)
                yield Button("Cancel", id="export-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#export-force").display = False
        self.query_one("#export-dir").focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#export-force").display = False  # a new folder needs its own "replace" decision

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.export(force=False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export-go":
            self.export(force=False)
        elif event.button.id == "export-force":
            self.export(force=True)
        else:
            self.dismiss(None)

    def export(self, force: bool) -> None:
        out = Path(self.query_one("#export-dir", Input).value.strip()).expanduser()
        note = self.query_one("#export-note", Static)
        try:
            printed = export_plan(self.plan, out, wizard_host(self).hardware, force=force)
        except ZeroTuiError as err:
            note.update(f"✗ {err.one_line()}")
            note.set_class(True, "error")
            self.query_one("#export-force").display = "already has" in err.message
            return
        self.app.notify(printed.strip() or f"Wrote {out}", title="Exported", timeout=10, markup=False)
        self.dismiss(out)

    def action_cancel(self) -> None:
        self.dismiss(None)
