"""Start a hyper-parameter sweep from the wizard's plan (Optuna, core/sweep/): trials, steps per trial and the
search space, with defaults that make sense for the plan (the learning rate a factor of 3 either way on a
log scale, gradient accumulation halved / kept / doubled). Dismissed with the started sweep's folder."""
from __future__ import annotations

from typing import Any, Optional

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from zerotui.core.errors import ZeroTuiError
from zerotui.core.plan.schema import Plan


class SweepDialog(ModalScreen[Optional[Any]]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        from zerotui.core.sweep.start import default_space

        with Vertical(id="sweep-dialog", classes="dialog"):
            yield Label("Search hyper-parameters (one short run per trial)", classes="dialog-title")
            yield Label("trials")
            yield Input("8", id="sweep-trials", type="integer")
            yield Label("optimizer steps per trial")
            yield Input(str(self.plan.max_steps or 200), id="sweep-steps", type="integer")
            yield Label("search space (NAME=LOW..HIGH[:log] or NAME=A,B,C)")
            yield Input(default_space(self.plan), id="sweep-space")
            yield Static("Trials run one at a time in the background and appear in the runs list; the "
                         "best plan is saved as a preset.", id="sweep-note", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Start", id="sweep-start", variant="primary", compact=True)
                yield Button("Cancel", id="sweep-cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#sweep-space").focus()

    def _note(self, text: str, error: bool = False) -> None:
        note = self.query_one("#sweep-note", Static)
        note.update(text)
        note.set_class(error, "error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "sweep-start":
            self.start()
        else:
            self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.start()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def start(self) -> None:
        try:
            trials = int(self.query_one("#sweep-trials", Input).value or "0")
            steps = int(self.query_one("#sweep-steps", Input).value or "0")
        except ValueError:
            self._note("trials and steps are whole numbers", error=True)
            return
        self._note("checking the space and starting the sweep...")
        self._start(trials, steps, self.query_one("#sweep-space", Input).value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="sweep-start", description="start a sweep")
    def _start(self, trials: int, steps: int, space: str) -> None:
        from zerotui.core.sweep.start import prepare_sweep, runs_dir_for, start_driver

        try:
            plan = self.plan.with_changes(max_steps=steps)
            paths, _ = prepare_sweep(plan, space, trials, runs_dir_for(plan))
            start_driver(paths)
        except ZeroTuiError as err:
            self.app.call_from_thread(self._note, err.one_line(), True)
            return
        self.app.call_from_thread(self.dismiss, paths)
