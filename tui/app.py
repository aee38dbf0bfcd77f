"""The zerotui App: the wizard's state, its screens, its key bindings and command palette entries.

Slow work never runs on the UI thread: hardware detection, resolving a model (config files, the meta
device), the recommender and launching each run run in thread workers and report back through the
dataclass messages of ``tui/messages.py``. The memory estimate itself takes ~0.02 ms, so once the model
is known it runs inline and the bar moves with the key press. Nothing here imports torch, deepspeed or
transformers: the core modules are imported inside the workers, so the first frame comes quickly.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Optional

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import get_current_worker

from zerotui.core.errors import ZeroTuiError
from zerotui.core.run.warmup import warm_up_in_background
from zerotui.core.hardware.types import Hardware
from zerotui.core.plan.schema import Plan
from zerotui.tui.dashboard.navigation import RunNavigation
from zerotui.tui.messages import BudgetReady, FitReady, HardwareDetected, OpenRun, RunLaunched, ShowRuns
from zerotui.tui.wizard.budget_bar import BudgetView
from zerotui.tui.wizard.host import ShowsBudget, ShowsHardware, ShowsPlan
from zerotui.tui.wizard.state import STEPS, WizardState

STEP_KEYS = [k for k, _ in STEPS]
#: Wait this long before resolving a model that is not cached yet, so typing a hub id character by
#: character does not start one lookup per key press.
SPEC_DEBOUNCE_S = 0.3
#: Plans the Fit dialog lists (the CLI's --top defaults to 5; the dialog has room for more).
FIT_ALTERNATIVES = 10


#: Each wizard step's screen (module in tui/wizard, class), imported when first shown: start-up stays quick.
_STEP_SCREENS = {"model": ("model", "ModelScreen"), "data": ("data_method", "DataMethodScreen"),
                 "precision": ("precision", "PrecisionScreen"), "zero": ("zero_offload", "ZeroOffloadScreen")}


def _step_screen(key: str) -> Screen:
    import importlib

    module, name = _STEP_SCREENS.get(key, ("review", "ReviewScreen"))
    return getattr(importlib.import_module(f"zerotui.tui.wizard.{module}"), name)()


class ZeroTuiApp(RunNavigation):
    CSS_PATH = "app.tcss"
    TITLE = "zerotui"
    BINDINGS = [
        # "?" first: the footer shows the first key of a binding, and "?" is the one people guess
        Binding("question_mark,f1", "help", "Help", tooltip="the keys of the screen you are on"),
        Binding("ctrl+t", "change_theme", "Theme", show=False, tooltip="change the colour theme"),
        Binding("ctrl+q", "quit", "Quit", priority=True,
                tooltip="quit (a launched run keeps training; `zerotui attach` reopens it)"),
    ]

    budget_view: reactive[BudgetView] = reactive(BudgetView(pending=True), always_update=True)
    read_only = False  # `zerotui serve` without --allow-control: dashboards refuse every control
    breakdown_expanded: reactive[bool] = reactive(False)

    def __init__(self, hardware: Optional[Hardware] = None, preset: Optional[str] = None,
                 attach: Any = None, runs_dir: Optional[Path] = None) -> None:
        super().__init__()
        self.hardware: Optional[Hardware] = hardware
        self.hardware_error = ""
        self.preset = preset
        self.attach = attach
        self.runs_dir = runs_dir
        self.state = WizardState()
        self.spec: Any = None              # ModelSpec of the current model, once resolved
        self.model_error = ""              # why the estimate could not run (unknown model, bad target)
        self.model_error_field = "model"   # the Plan field that message is about
        self._spec_cache: dict[tuple, Any] = {}
        self._scheduled_revision = -1
        self.last_fit: Optional[FitReady] = None

    # -- start ------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        if self.attach is not None:
            from zerotui.tui.dashboard.screen import DashboardScreen
            self.push_screen(DashboardScreen(self.attach, live=True))
            return
        from zerotui.tui.wizard.hardware import HardwareScreen
        self.push_screen(HardwareScreen())
        if self.hardware is None:
            # After the first frame: NVML and psutil would otherwise compete with the first paint.
            self.call_after_refresh(self.detect_hardware)
        else:
            self.post_message(HardwareDetected(self.hardware))
        if self.preset:
            self.open_preset(self.preset)
        if not self.is_headless:  # ops compile and a spare worker imports while the user plans
            warm_up_in_background()

    @work(thread=True, exclusive=True, exit_on_error=False, group="hardware",
          description="detect GPUs, RAM and disks")
    def detect_hardware(self) -> None:
        try:
            from zerotui.core.hardware.detect import detect
            hw, error = detect(), ""
        except Exception as err:  # noqa: BLE001 - detect() must not raise, but the UI must survive if it does
            hw, error = Hardware(source="fallback"), f"hardware detection failed: {err}"
        self.post_message(HardwareDetected(hw, error))

    def on_hardware_detected(self, message: HardwareDetected) -> None:
        self.hardware = message.hardware
        self.hardware_error = message.error
        for screen in self.screen_stack:
            if isinstance(screen, ShowsHardware):
                screen.show_hardware(message.hardware, message.error)
        self.schedule_estimate()

    # -- the Plan ---------------------------------------------------------------------------------
    def update_field(self, name: str, value: Any) -> None:
        self.state.set(name, value)
        self.schedule_estimate()

    def apply_plan(self, plan: Plan) -> None:
        """Take a whole Plan (preset, Fit): every screen shows its values and the budget is redone."""
        self.state.replace_plan(plan)
        for screen in self.screen_stack:
            if isinstance(screen, ShowsPlan) and screen.is_mounted:  # a new one shows it as it mounts
                screen.show_state()
        self.schedule_estimate()

    def open_preset(self, name: str) -> None:
        try:
            from zerotui.core.plan.presets import load_preset
            plan = load_preset(name)
        except ZeroTuiError as err:
            self.notify(err.one_line(), title="Preset", severity="error", timeout=8, markup=False)
            return
        self.apply_plan(plan)
        self.go_to_step("review")

    # -- the budget -------------------------------------------------------------------------------
    def schedule_estimate(self) -> None:
        first = self.state.first_error()
        plan_error = "" if not first else first[1] if first[1].startswith(first[0]) else f"{first[0]}: {first[1]}"
        self.budget_view = replace(self.budget_view, pending=True, plan_error=plan_error, error="")
        if self.hardware is None or first:
            return
        self._scheduled_revision = self.state.revision
        if self._spec_key(self.state.plan) in self._spec_cache:
            # estimate() itself takes ~0.02 ms (benchmarks/results/wizard-latency.json): run it right here,
            # so the bar moves in the same frame as the key press. Only resolving a model not seen yet
            # (reading config files, building on the meta device) goes to a thread.
            self.post_message(self._estimate(self.state.plan, self.hardware, self.state.revision))
        else:
            self.estimate_budget(self.state.plan, self.hardware, self.state.revision)

    def _spec_key(self, plan: Plan) -> tuple:
        return (plan.model, str(plan.model_config_path or ""), plan.trust_remote_code)

    def spec_for(self, plan: Plan) -> Any:
        """The ModelSpec of a plan's model, resolved once (it may read config files or build on meta)."""
        key = self._spec_key(plan)
        if key not in self._spec_cache:
            from zerotui.core.model.spec import spec_for_plan
            self._spec_cache[key] = spec_for_plan(plan)
        return self._spec_cache[key]

    @work(thread=True, exclusive=True, exit_on_error=False, group="estimate",
          description="resolve a model not seen yet, then estimate its memory")
    def estimate_budget(self, plan: Plan, hardware: Hardware, revision: int) -> None:
        worker = get_current_worker()
        time.sleep(SPEC_DEBOUNCE_S)
        if worker.is_cancelled:
            return
        message = self._estimate(plan, hardware, revision)
        if not worker.is_cancelled:
            self.post_message(message)

    def _estimate(self, plan: Plan, hardware: Hardware, revision: int) -> BudgetReady:
        """The budget of ``plan`` as a message (or why there is none); safe on any thread."""
        spec = None
        try:
            spec = self.spec_for(plan)
            from zerotui.core.estimate.budget import estimate
            t0 = time.perf_counter()
            budget = estimate(plan, hardware, spec=spec)
            return BudgetReady(revision, budget, spec, seconds=time.perf_counter() - t0)
        except ZeroTuiError as err:
            return BudgetReady(revision, spec=spec, error=err.one_line(), field=err.field)

    def on_budget_ready(self, message: BudgetReady) -> None:
        if message.revision != self._scheduled_revision:
            return  # a newer plan is being estimated
        self.spec = message.spec
        self.model_error = message.error
        self.model_error_field = message.field or "model"  # a model that cannot be read, by default
        budget = message.budget if message.budget is not None else None
        self.budget_view = BudgetView(budget=budget, pending=False, error=message.error,
                                      plan_error=self.budget_view.plan_error, seconds=message.seconds)
        for screen in self.screen_stack:
            if isinstance(screen, ShowsBudget) and screen.is_mounted:
                screen.budget_changed()

    def action_toggle_breakdown(self) -> None:
        self.breakdown_expanded = not self.breakdown_expanded

    # -- launch gate ------------------------------------------------------------------------------
    def launch_blockers(self) -> tuple[list[str], list[str]]:
        """(reasons that forbid launching, reasons that only "launch anyway" may override)."""
        from zerotui.tui.wizard.launch_gate import launch_blockers
        return launch_blockers(self.state, self.hardware, self.budget_view, self.model_error)

    # -- navigation -------------------------------------------------------------------------------
    @property
    def current_step(self) -> Optional[str]:
        return getattr(self.screen, "STEP", None) or None

    def go_to_step(self, key: str) -> None:
        if key not in STEP_KEYS:
            return
        if self.current_step == key:
            return
        screen = _step_screen(key)
        if self.current_step:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def action_go_to_step(self, key: str) -> None:
        self.go_to_step(key)

    def action_next_step(self) -> None:
        cur = self.current_step
        if cur is None:
            self.go_to_step(STEP_KEYS[0])
        elif cur != STEP_KEYS[-1]:
            self.go_to_step(STEP_KEYS[STEP_KEYS.index(cur) + 1])

    def action_previous_step(self) -> None:
        cur = self.current_step
        if cur is None:
            return
        i = STEP_KEYS.index(cur)
        if i == 0:
            self.pop_screen()  # back to the hardware screen
        else:
            self.go_to_step(STEP_KEYS[i - 1])

    def action_new_run(self) -> None:
        """Start again from the default plan at step 1; asks first when the plan was changed."""
        from zerotui.tui.wizard.state import starter_plan
        fresh = starter_plan()
        if self.state.plan == fresh and not self.state.errors:
            self._start_over(fresh)
            return
        from zerotui.tui.common.confirm import ConfirmScreen

        def answer(yes: Optional[bool]) -> None:
            if yes:
                self._start_over(fresh)
        self.push_screen(ConfirmScreen(
            "Start a new run?", "The plan goes back to the default (the tiny demo model); the changes "
            "made to this one are dropped. Save it as a preset first to keep it.", yes="Start over"), answer)

    def _start_over(self, plan: Plan) -> None:
        self.apply_plan(plan)
        self.go_to_step(STEP_KEYS[0])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> Optional[bool]:
        # Keys that would do nothing where they are leave the footer (Next on the last step, the
        # review's ctrl+r on the review), which leaves room for the ones that do something.
        if action == "next_step":
            return self.current_step != STEP_KEYS[-1]
        if action == "go_to_step" and parameters:
            return self.current_step != parameters[0]
        return True

    def action_choose_preset(self) -> None:
        from zerotui.tui.wizard.preset_picker import PresetPickerScreen

        def chosen(name: Optional[str]) -> None:
            if name:
                self.open_preset(name)
        self.push_screen(PresetPickerScreen(), chosen)

    def action_attach(self) -> None:
        self.post_message(ShowRuns(self.runs_dir))

    def open_dashboard(self, paths: Any) -> None:
        self.post_message(OpenRun(paths, live=True))

    def action_help(self) -> None:
        from zerotui.tui.common.help import HelpScreen
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    # -- Fit --------------------------------------------------------------------------------------
    def action_fit(self) -> None:
        if self.hardware is None:
            self.notify("Still detecting the hardware; try again in a moment.", title="Fit")
            return
        if self.state.errors:
            self.notify(self.launch_blockers()[0][0], title="Fit needs a valid plan", severity="warning", markup=False)
            return
        self.find_fitting_plans(self.state.plan, self.hardware, self.state.revision)

    @work(thread=True, exclusive=True, exit_on_error=False, group="fit",
          description="rank plans that fit this machine")
    def find_fitting_plans(self, plan: Plan, hardware: Hardware, revision: int) -> None:
        worker = get_current_worker()
        try:
            spec = self.spec_for(plan)
            from zerotui.core.estimate.recommend import recommend, why_nothing_fits
            # The calls `zerotui fit` makes (cli/commands/fit.py), with the same model spec: the dialog
            # and the command line must suggest the same ways out (LoRA, QLoRA, a shorter sequence...).
            recs = recommend(plan, hardware, spec, limit=FIT_ALTERNATIVES)
            why = [] if recs else why_nothing_fits(plan, hardware, spec)
            message = FitReady(revision, list(recs), list(why))
        except ZeroTuiError as err:
            message = FitReady(revision, error=err.one_line())
        if not worker.is_cancelled:
            self.post_message(message)

    def on_fit_ready(self, message: FitReady) -> None:
        from zerotui.tui.wizard.fit import FitScreen
        self.last_fit = message
        if message.error or not message.recommendations:
            self.push_screen(FitScreen(self.state.plan, message, applied=None))
            return
        original = self.state.plan
        self.apply_plan(message.recommendations[0].plan)

        def chosen(choice: Optional[int]) -> None:
            if choice is None:
                return
            if choice < 0:
                self.apply_plan(original)
                self.notify("Back to the plan you had before Fit.", title="Fit undone")
            else:
                self.apply_plan(message.recommendations[choice].plan)
        self.push_screen(FitScreen(original, message, applied=0), chosen)

    # -- launch -----------------------------------------------------------------------------------
    def action_launch(self, anyway: bool = False) -> None:
        hard, soft = self.launch_blockers()
        if hard or (soft and not anyway):
            self.notify((hard or soft)[0], title="Cannot launch yet", severity="error", timeout=8, markup=False)
            return
        self.notify("Starting the run…", title="Launch", timeout=3)
        self.start_run_worker(self.state.plan, self.hardware, self.runs_dir, anyway)

    @work(thread=True, exclusive=True, exit_on_error=False, group="launch", description="start the run")
    def start_run_worker(self, plan: Plan, hardware: Hardware, runs_dir: Optional[Path], force: bool) -> None:
        try:
            from zerotui.core.run.start import start_run
            paths = start_run(plan, hardware, runs_dir=runs_dir, force=force, warn=self._launch_warning)
        except ZeroTuiError as err:
            self.post_message(RunLaunched(error=err.message, hint=err.hint))
            return
        self.post_message(RunLaunched(paths))

    def _launch_warning(self, line: str) -> None:  # it goes ahead (say, kept checkpoints that will not all fit)
        self.call_from_thread(self.notify, line, title="Launch warning", severity="warning", timeout=20, markup=False)

    def on_run_launched(self, message: RunLaunched) -> None:
        if message.error:
            from zerotui.tui.common.error_modal import ErrorScreen
            self.push_screen(ErrorScreen("The run could not start", message.error, message.hint))
            return
        self.notify(f"Run started in {message.paths.root}", title="Launched", timeout=6, markup=False)
        self.open_dashboard(message.paths)

    # -- command palette --------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("New run", "Start again from the default plan, at the model step", self.action_new_run)
        yield SystemCommand("Open a preset", "Load a built-in or saved preset and review it",
                            self.action_choose_preset)
        yield SystemCommand("Attach to a run", "Open the dashboard of a live or finished run", self.action_attach)
        for i, (key, title) in enumerate(STEPS, 1):
            yield SystemCommand(f"Go to step {i}: {title}", f"Jump to the {title} step",
                                lambda key=key: self.go_to_step(key))
        yield SystemCommand("Fit to this machine", "Apply the fastest plan that fits, with alternatives",
                            self.action_fit)
        yield SystemCommand("Toggle the memory breakdown", "Show or hide what the memory is made of",
                            self.action_toggle_breakdown)
        if self.current_step == "review":
            yield SystemCommand("Launch", "Start the run and open its dashboard", self.action_launch)
            yield SystemCommand("Save preset", "Save this plan as a named preset", screen.action_save_preset)
            yield SystemCommand("Export", "Write ds_config.json and launch.sh", screen.action_export)
            yield SystemCommand("Copy ds_config.json", "Copy the DeepSpeed config to the clipboard",
                                screen.action_copy_config)
            yield SystemCommand("Copy launch command", "Copy the exact command to the clipboard",
                                screen.action_copy_command)
        yield SystemCommand("Help", "The keys of this screen, and the App's", self.action_help)
