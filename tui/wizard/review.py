"""Step 5, review: the plan in plain words, warnings, the generated ds_config.json and the exact launch
command (both copyable), and the Save preset / Export / Launch actions.

Launch is disabled with the reason while the plan is invalid or does not fit; "Launch anyway" appears
only for "does not fit" (an invalid plan cannot be started at all).
"""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any, Optional

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.highlight import highlight
from textual.widgets import Button, Label, Static

from zerotui.core.errors import ZeroTuiError
from zerotui.tui.messages import InputsChecked, OpenSweep
from zerotui.tui.wizard.plan_words import plan_in_words
from zerotui.tui.wizard.step import StepScreen

#: Shown in place of the run folder, which gets its timestamped name only at launch.
RUN_DIR_PLACEHOLDER = "<YYYYmmdd-HHMMSS>-{name}"


class ReviewScreen(StepScreen):
    STEP = "review"
    HELP_TITLE = "On the review"
    FOOTER_KEEP = ("launch", "export", "save_preset", "app.previous_step", "app.fit")
    BINDINGS = [
        Binding("l", "launch", "Launch", tooltip="start the run and open its dashboard"),
        Binding("s", "save_preset", "Save", tooltip="save this plan as a named preset"),
        Binding("e", "export", "Export", tooltip="write ds_config.json and launch.sh for the plain deepspeed CLI"),
        Binding("w", "sweep", "Sweep", tooltip="search learning rate and accumulation with Optuna: short runs"),
        # Out of the footer here so the review's actions fit 80 columns: the budget's title names b.
        Binding("b", "app.toggle_breakdown", "Breakdown", show=False,
                tooltip="show or hide what the memory is made of (or click the budget)"),
        Binding("c", "copy_config", "Copy config", show=False, tooltip="copy ds_config.json to the clipboard"),
        Binding("y", "copy_command", "Copy command", show=False,
                tooltip="copy the exact launch command to the clipboard"),
    ]

    def compose_form(self) -> ComposeResult:
        yield Label("The plan", classes="section-title")
        yield Static("", id="review-words", markup=False)
        yield Static("", id="review-warnings", markup=False)
        yield Static("", id="launch-status", markup=False)
        with Horizontal(id="review-actions"):
            yield Button("Launch  l", id="launch", variant="success", compact=True)
            yield Button("Launch anyway", id="launch-anyway", variant="warning", compact=True)
            yield Button("Save preset  s", id="save-preset", compact=True)
            yield Button("Export  e", id="export", compact=True)
        yield Label("Launch command (y copies)", classes="section-title")
        yield Static("", id="review-command", markup=False)
        yield Label("ds_config.json (c copies)", classes="section-title")
        yield Static("", id="review-config")

    #: The plan revision whose data file and model folder are checked, and what the check said (None:
    #: not back yet).
    _checked_revision: int = -1
    _input_error: Optional[str] = None

    def on_mount(self) -> None:
        super().on_mount()
        self.refresh_derived()
        self.query_one("#form").focus()

    # -- the data file and model folder, checked as `zerotui train` checks them -----------------------
    def _schedule_input_check(self) -> None:
        revision = self.state.revision
        if revision != self._checked_revision and not self.state.errors:
            self._checked_revision = revision
            self._input_error = None
            plan = self.state.plan
            from zerotui.core.run.input_check import local_model_folder
            from zerotui.core.plan.schema import SAMPLE_DATA
            if local_model_folder(plan) is None and (plan.data == SAMPLE_DATA or str(plan.data).startswith("hub:")):
                self._input_error = self._check_now(plan)  # no file to read: instant, no "being checked"
            else:
                self.check_inputs(plan, revision)

    @staticmethod
    def _check_now(plan) -> str:
        from zerotui.core.run.input_check import check_inputs
        try:
            # A planning-only model name is the launch gate's call (tui/wizard/launch_gate.py), not this check's.
            check_inputs(plan, training=True, planning_names=False)
        except ZeroTuiError as err:
            return err.one_line()
        return ""

    @work(thread=True, exclusive=True, exit_on_error=False, group="input-check",
          description="check the data file and model folder")
    def check_inputs(self, plan, revision: int) -> None:
        # Reads a data file of up to 64 MiB (and the model's config.json): off the UI thread.
        self.post_message(InputsChecked(revision, self._check_now(plan)))

    def on_inputs_checked(self, message: InputsChecked) -> None:
        if message.revision == self._checked_revision:
            self._input_error = message.error
            self.refresh_derived()

    def _input_blockers(self) -> list[str]:
        if self.state.errors:
            return []
        if self._checked_revision != self.state.revision or self._input_error is None:
            return ["the data file and model folder are being checked"]
        return [self._input_error] if self._input_error else []

    def budget_changed(self) -> None:
        super().budget_changed()
        self.refresh_derived()

    # -- what is shown ----------------------------------------------------------------------------
    def ds_config_text(self) -> str:
        from zerotui.core.deepspeed.config import build_ds_config
        app = self.host
        hw = app.hardware
        plan = self.state.plan
        config = build_ds_config(plan, plan.world_size(hw.gpu_count if hw else 0), app.spec)
        return json.dumps(config, indent=2)

    def command_text(self) -> str:
        from zerotui.core.run.launcher import launcher_argv
        from zerotui.core.paths import default_runs_dir
        app = self.host
        plan = self.state.plan
        base = Path(app.runs_dir or plan.runs_dir or default_runs_dir())
        run_dir = base / RUN_DIR_PLACEHOLDER.format(name=plan.name)
        argv = launcher_argv(plan, run_dir, app.hardware, python=sys.executable)
        return shlex.join(argv)

    def refresh_derived(self) -> None:
        app = self.host
        hw = app.hardware
        words = [f"• {w}" for w in plan_in_words(self.state.plan, hw, app.spec)]
        if self.state.errors:  # the words are the last valid plan's: weight offload "none" beside a chosen cpu
            words.insert(0, "(The last valid plan: an answer has an error, named below.)")
        self.query_one("#review-words", Static).update("\n".join(words))

        warnings: list[str] = []
        budget = app.budget_view.budget
        if budget is not None:
            warnings += list(getattr(budget, "warnings", []) or [])
        self.query_one("#review-warnings", Static).update("\n".join(f"! {w}" for w in warnings))
        self.query_one("#review-warnings").display = bool(warnings)

        self._schedule_input_check()
        hard, soft = app.launch_blockers()
        hard = hard + self._input_blockers()
        status = self.query_one("#launch-status", Static)
        launch = self.query_one("#launch", Button)
        anyway = self.query_one("#launch-anyway", Button)
        launch.disabled = bool(hard or soft)
        anyway.display = bool(soft) and not hard
        if hard:
            status.update("✗ Launch is disabled: " + "; ".join(hard[:3]))
        elif soft:
            status.update("✗ Launch is disabled: " + soft[0] + '. "Launch anyway" overrides it.')
        else:
            status.update("✓ Ready to launch.")
        status.set_class(bool(hard or soft), "error")

        if hw is None or self.state.errors:
            return
        for target, build in (("#review-config", self.ds_config_text), ("#review-command", self.command_text)):
            widget = self.query_one(target, Static)
            try:
                text = build()
            except ZeroTuiError as err:
                widget.update(f"✗ {err.one_line()}")
                continue
            if target == "#review-config":
                widget.update(highlight(text, language="json"))  # theme-aware colours, NO_COLOR-safe
            else:
                widget.update(text)

    # -- actions ----------------------------------------------------------------------------------
    def on_button_pressed(self, event: Button.Pressed) -> None:
        actions = {"launch": "launch", "launch-anyway": "launch_anyway", "save-preset": "save_preset",
                   "export": "export"}
        if event.button.id in actions:
            self.run_action(actions[event.button.id])

    def action_launch(self) -> None:
        if self._refuse_bad_inputs():
            return
        self.app.action_launch(anyway=False)

    def action_launch_anyway(self) -> None:
        if self._refuse_bad_inputs():
            return
        self.app.action_launch(anyway=True)

    def _refuse_bad_inputs(self) -> bool:
        """A data file or model folder that cannot train blocks "launch anyway" too (it is not a guess)."""
        blockers = self._input_blockers()
        if blockers:
            self.notify(blockers[0], title="Cannot launch yet", severity="error", timeout=8, markup=False)
        return bool(blockers)

    def _copy(self, what: str, build) -> None:
        try:
            text = build()
        except (ZeroTuiError, ImportError) as err:
            self.notify(str(err), title=f"Cannot copy the {what}", severity="error", markup=False)
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied the {what} ({len(text)} characters) to the clipboard.", title="Copied", markup=False)

    def action_copy_config(self) -> None:
        self._copy("ds_config.json", self.ds_config_text)

    def action_copy_command(self) -> None:
        self._copy("launch command", self.command_text)

    def action_save_preset(self) -> None:
        from zerotui.tui.wizard.save_preset import SavePresetScreen
        if self.state.errors:
            self.notify(self.app.launch_blockers()[0][0], title="Fix the plan first", severity="error", markup=False)
            return
        self.app.push_screen(SavePresetScreen(self.state.plan))

    def action_export(self) -> None:
        from zerotui.tui.wizard.export_dialog import ExportScreen
        if self.state.errors:
            self.notify(self.app.launch_blockers()[0][0], title="Fix the plan first", severity="error", markup=False)
            return
        self.app.push_screen(ExportScreen(self.state.plan))

    def action_sweep(self) -> None:
        from zerotui.tui.wizard.sweep_dialog import SweepDialog
        if self.state.errors:
            self.notify(self.app.launch_blockers()[0][0], title="Fix the plan first", severity="error", markup=False)
            return

        def started(paths: Any) -> None:
            if paths is not None:
                self.post_message(OpenSweep(paths))
        self.app.push_screen(SweepDialog(self.state.plan), started)
