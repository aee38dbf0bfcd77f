"""What every wizard step shares: header, step bar, a scrolling form, the budget bar, the footer, and
the plumbing from widget events to Plan fields (through each control's ``f-<field>`` id)."""
from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Checkbox, Header, Input, RadioSet, Select

from zerotui.tui.common.footer import FitFooter
from zerotui.tui.wizard.budget_bar import BudgetBar
from zerotui.tui.wizard.field_help import Choice, FieldRow, field_of
from zerotui.tui.wizard.step_bar import StepBar
from zerotui.tui.wizard.host import WizardHost, wizard_host
from zerotui.tui.wizard.state import STEPS, WizardState


class StepScreen(Screen):
    """Subclasses set ``STEP`` (a key of STEPS) and implement ``compose_form``."""

    STEP: ClassVar[str] = ""
    HELP_TITLE: ClassVar[str] = "Every wizard step"
    HELP_INTRO: ClassVar[str] = """\
zerotui plans a DeepSpeed ZeRO fine-tune, checks that it fits this machine, and launches it.

Steps, in accelerate's order: 1 Model · 2 Data & method · 3 Precision · 4 ZeRO & offload · 5 Review. \
The memory budget under every step follows each change: GPU, CPU RAM and NVMe, need against \
capacity, with a word beside each bar: OK, TIGHT (over 90 %), OVER. Letter and digit keys work \
outside text boxes (tab leaves one; tab / shift+tab move between fields)."""
    #: Footer entries kept first when the terminal is narrow (tui/common/footer.py).
    FOOTER_KEEP: ClassVar[tuple[str, ...]] = ("app.next_step", "app.previous_step", "app.fit")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "app.next_step", "Next", priority=True, tooltip="the next step"),
        Binding("escape", "app.previous_step", "Back",
                tooltip="the previous step (from step 1: the hardware screen)"),
        Binding("ctrl+g", "app.fit", "Fit", priority=True,
                tooltip="apply the fastest plan that fits, with the alternatives to pick; u undoes"),
        Binding("ctrl+r", "app.go_to_step('review')", "Review", priority=True, tooltip="go to the review"),
        Binding("b", "app.toggle_breakdown", "Breakdown",
                tooltip="show or hide what the memory is made of (or click the budget)"),
        # The hardware screen's n and p, on every step too: a person should not have to go back for them.
        Binding("p", "app.choose_preset", "Preset", show=False, tooltip="load a preset and open its review"),
        Binding("n", "app.new_run", "New run", show=False,
                tooltip="start again from the default plan, at step 1 (asks first if you changed it)"),
        *[Binding(str(i), f"app.go_to_step('{key}')", title, show=False,
                  tooltip="jump to that step (or click the step bar)")
          for i, (key, title) in enumerate(STEPS, 1)],
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield StepBar(self.STEP)
        with VerticalScroll(id="form"):
            yield from self.compose_form()
        yield BudgetBar(id="budget")
        yield FitFooter()

    def compose_form(self) -> ComposeResult:  # pragma: no cover - every step overrides it
        yield from ()

    @property
    def host(self) -> WizardHost:
        return wizard_host(self)

    @property
    def state(self) -> WizardState:
        return self.host.state

    def on_mount(self) -> None:
        number = [k for k, _ in STEPS].index(self.STEP) + 1
        self.sub_title = f"step {number} of {len(STEPS)}: {dict(STEPS)[self.STEP]}"
        # The App tells only mounted screens of a new plan or budget: catch up on what came meanwhile.
        self.show_state()

    def on_screen_resume(self) -> None:
        self.show_state()

    # -- state → widgets --------------------------------------------------------------------------
    def show_state(self) -> None:
        """Put every field's current answer into its control (after Fit, a preset, or going back)."""
        for row in self.query(FieldRow):
            if row.field not in self.state.errors:
                row.show_value(self.state.value(row.field))
        self.show_errors()
        self.refresh_derived()

    def field_errors(self) -> dict[str, str]:
        """The answers' own errors, plus the estimator's complaint about a field (unknown model, a LoRA
        target the model lacks) once the answers are valid."""
        errors = dict(self.state.errors)
        host = self.host
        if not errors and host.model_error:
            errors[host.model_error_field] = host.model_error
        return errors

    def show_errors(self) -> None:
        errors = self.field_errors()
        for row in self.query(FieldRow):
            row.set_error(errors.get(row.field, ""))

    def budget_changed(self) -> None:
        """The App has a new budget (``host.ShowsBudget``): the estimator may name a field now."""
        self.show_errors()

    def refresh_derived(self) -> None:
        """Hook: subclasses update what depends on several fields (disabled choices, notes)."""

    # -- widgets → state --------------------------------------------------------------------------
    def _changed(self, widget: Any, value: Any) -> None:
        field = field_of(widget)
        if field is None:
            return
        if value == self.state.value(field) and field not in self.state.errors:
            return  # an echo of show_value, or no change at all
        self.host.update_field(field, value)
        self.show_errors()
        self.refresh_derived()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._changed(event.input, event.value)

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self._changed(event.checkbox, event.value)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is not Select.BLANK:
            self._changed(event.select, event.value)

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        if isinstance(event.pressed, Choice):
            self._changed(event.radio_set, event.pressed.choice)
