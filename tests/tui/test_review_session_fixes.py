"""What a keyboard-only walk through the wizard and the runs list turned up (tmux, 80×24 and 160×45):

- the QLoRA "Base weights" choice (4-bit / 8-bit) took focus but was never drawn;
- the review worded a QLoRA plan as plain LoRA, and said "Ready to launch" for a built-in planning shape
  ('llama-2-7b') whose launch then failed for want of weights;
- a cross-field error (QLoRA with weight offload) marked no field, named CLI flags, and the budget bar cut
  it off at 80 columns; weight offload was offered to QLoRA at all;
- the global batch under Micro-batch showed the last valid number (999) beside the 99999999 typed;
- the runs list showed a resumed, running run with the reason of the stop it came back from, and its
  two-second refresh undid any scroll to the columns past 80 (started, duration, last heartbeat);
- a paused run showed an "ETA" clock time that moved on while nothing trained;
- the breakdown of a run on the CPU spoke of "GPU: per GPU at its peak".
"""
from __future__ import annotations

import json
import os
import time

from textual.widgets import Button, DataTable, Label, Static

from dashboard_helpers import DashApp, loaded, make_run, text_of, wait_for
from wizard_helpers import choose, fill, jump, new_run_at_data, pilot_test, settle
from zerotui.core.estimate.budget import estimate
from zerotui.core.model.spec import spec_for_plan
from zerotui.core.plan.presets import load_preset
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.dashboard.navigation import RunNavigation
from zerotui.tui.dashboard.runs import RunsScreen
from zerotui.tui.wizard.budget_bar import BudgetBar
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb
from zerotui.tui.wizard.plan_words import plan_in_words
from zerotui.tui.wizard.state import WizardState, starter_plan
from zerotui.tui.wizard.zero_offload import offload_choices


@pilot_test
async def test_the_qlora_base_weights_choice_is_drawn():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(160, 45)) as pilot:
        await new_run_at_data(pilot)
        await choose(pilot, "method", "qlora")
        box, row = app.screen.query_one("#qlora-fields"), app.screen.query_one("#row-quant_bits")
        assert box.region.contains_region(row.region), f"{row.region} is clipped by {box.region}"
        await choose(pilot, "quant_bits", 8)  # reachable with the keys, and now visible
        assert app.state.plan.quant_bits == 8


def test_the_review_says_qlora_and_how_its_base_is_stored():
    plan = load_preset("llama7b-24gb-qlora")
    method = plan_in_words(plan, workstation_24gb())[1]
    assert "QLoRA" in method and "4-bit NF4" in method
    assert "8-bit" in plan_in_words(plan.with_changes(quant_bits=8), workstation_24gb())[1]


@pilot_test
async def test_a_planning_shape_is_not_ready_to_launch(tmp_path):
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-lora", runs_dir=tmp_path / "runs")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.budget_view.budget.fits  # nothing else stands in the way
        status = str(app.screen.query_one("#launch-status", Static).render())
        assert "Ready to launch" not in status and "built-in shape for planning" in status, status
        assert app.screen.query_one("#launch", Button).disabled
        await pilot.press("l")
        await settle(pilot)
        assert not (tmp_path / "runs").exists()


def test_a_cross_field_error_lands_on_the_field_it_names():
    state = WizardState()
    state.set_many({"method": "qlora", "stage": 3, "offload_params": "cpu"})
    assert list(state.errors) == ["offload_params"]  # was "plan": no row marked
    reasons = {v: r for v, _, r in offload_choices("offload_params", 3, True, True, "qlora")}
    assert reasons["none"] == "" and reasons["cpu"] and reasons["nvme"]  # not offered to QLoRA at all


@pilot_test
async def test_plan_errors_are_in_the_wizards_words_and_whole_at_80_columns():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(80, 24)) as pilot:
        await new_run_at_data(pilot)
        await jump(pilot, 4)
        await choose(pilot, "stage", 3)
        await choose(pilot, "offload_optimizer", "nvme")  # no NVMe folder yet
        row_error = text_of(app.screen.query_one("#row-nvme_path .field-error", Static))
        status = app.screen.query_one("#budget-status", Label)
        assert "--" not in row_error and "choose an NVMe folder" in row_error, row_error
        assert "--" not in str(status.render()) and "nvme_path: nvme_path" not in str(status.render())
        assert status.region.height >= 2  # wrapped, not cut to "give --nvme-pat…"
        await jump(pilot, 5)
        launch = str(app.screen.query_one("#launch-status", Static).render())
        assert "--" not in launch and "last valid plan" in str(app.screen.query_one("#review-words").render())


@pilot_test
async def test_the_global_batch_is_not_the_last_valid_one_under_a_wrong_micro_batch():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await new_run_at_data(pilot)
        await fill(pilot, "micro_batch", "99999999")
        assert "micro_batch" in app.state.errors
        assert text_of(app.screen.query_one("#global-batch", Static)).strip() == ""
        await fill(pilot, "micro_batch", "4")
        assert text_of(app.screen.query_one("#global-batch", Static)).startswith("= ")


def test_the_breakdown_of_a_cpu_run_says_nothing_of_a_gpu():
    plan = starter_plan()
    budget = estimate(plan, cpu_only(), spec=spec_for_plan(plan))
    caption = str(BudgetBar._breakdown_table(budget).caption)
    assert "GPU" not in caption and "CPU RAM: per machine" in caption, caption


class _RunsApp(RunNavigation):
    def __init__(self, runs_dir) -> None:
        super().__init__()
        self.runs_dir = runs_dir

    def on_mount(self) -> None:
        self.push_screen(RunsScreen(self.runs_dir, refresh_s=0.2))


@pilot_test
async def test_a_resumed_run_shows_no_old_stop_reason_and_the_list_keeps_its_scroll(tmp_path):
    runs = tmp_path / "runs"
    paths = make_run(runs, "live.jsonl", name="20260101-000000-resumed",
                     status={"state": "running", "pid": os.getpid(), "heartbeat": time.time()})
    with paths.events.open("a") as f:
        for ev in ({"type": "run_finished", "state": "stopped", "reason": "stop requested by dashboard"},
                   {"type": "run_started", "start_step": 600, "total_steps": 3000}):
            f.write(json.dumps({"v": 1, "t": time.time(), **ev}) + "\n")
    app = _RunsApp(runs)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: len(screen.rows) == 1 and screen.rows[0].live, what="the live run")
        detail = text_of(screen.query_one("#runs-detail"))
        assert "stop requested" not in detail and "Enter opens" in detail, detail
        table = screen.query_one(DataTable)
        assert table.max_scroll_x > 0  # 80 columns: started, duration and heartbeat are to the right
        await pilot.press(*["right"] * 12)
        await pilot.pause(0.1)
        scrolled = table.scroll_x
        assert scrolled > 0
        await pilot.pause(0.6)  # three refreshes of the list
        assert table.scroll_x == scrolled


@pilot_test
async def test_a_paused_run_gives_no_end_time_that_moves_on_with_the_clock(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    status = json.loads(paths.status.read_text())
    paths.status.write_text(json.dumps({**status, "state": "paused"}))
    app = DashApp(paths)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: screen.state == "paused", what="the paused state")
        await pilot.pause(0.1)
        eta = text_of(screen.query_one("#dash-eta"))
        assert "to go once resumed" in eta and "ETA" not in eta, eta
