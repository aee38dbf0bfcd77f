"""`zerotui sweep --parallel N` (core/sweep/slots.py): one single-GPU trial per GPU, pinned through the
plan's gpu_ids (so DeepSpeed's launcher sets CUDA_VISIBLE_DEVICES), CPU processes without GPUs, and a
clear refusal of what cannot run side by side."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from zerotui.core.errors import PlanError
from zerotui.core.hardware.types import Hardware
from zerotui.core.plan.schema import Plan
from zerotui.core.run.launcher import launcher_argv, uses_launcher
from zerotui.core.sweep.slots import pin, plan_slots


def test_one_trial_per_gpu_each_pinned_to_its_own_gpu_through_the_launcher():
    plan = Plan(name="p", max_steps=4)
    slots = plan_slots(plan, 2, gpu_count=4)
    assert [s.gpu for s in slots] == [0, 1] and [s.label for s in slots] == ["gpu 0", "gpu 1"]
    hw = Hardware(gpus=[])  # the argv does not depend on the machine once gpu_ids are given
    for slot in slots:
        trial = pin(plan, slot, 2)
        assert trial.gpus == 1 and trial.gpu_ids == [slot.gpu] and trial.world_size(4) == 1
        argv = launcher_argv(trial, "/r", hw)
        assert uses_launcher(trial, hw) and argv[argv.index("--include") + 1] == f"localhost:{slot.gpu}"


def test_the_plans_gpu_ids_choose_the_gpus():
    slots = plan_slots(Plan(name="p", max_steps=4, gpu_ids=[2, 3]), 2, gpu_count=4)
    assert [s.gpu for s in slots] == [2, 3]


def test_without_gpus_the_trials_are_single_cpu_processes():
    plan = Plan(name="p", max_steps=4)
    slots = plan_slots(plan, 2, gpu_count=0)
    assert [s.label for s in slots] == ["slot 0", "slot 1"]
    assert all(pin(plan, s, 2).gpus == 1 and pin(plan, s, 2).gpu_ids is None for s in slots)


def test_one_at_a_time_leaves_the_plan_as_it_is():
    plan = Plan(name="p", max_steps=4, gpus=2)
    (slot,) = plan_slots(plan, 1, gpu_count=8)
    assert pin(plan, slot, 1) == plan


@pytest.mark.parametrize("plan, parallel, gpus, words", [
    (Plan(name="p"), 3, 2, "--parallel 3: one trial runs per GPU and there are only this machine's 2 GPU(s)"),
    (Plan(name="p", gpu_ids=[0, 1]), 3, 8, "only the plan's --gpu-ids 0,1"),
    (Plan(name="p", gpu_ids=[1, 5]), 2, 2, "not 5"),
    (Plan(name="p", gpus=2), 2, 4, "asks for --gpus 2"),
    (Plan(name="p", gpu_ids=[0]), 2, 0, "no GPU was detected"),
    (Plan(name="p"), 0, 0, "give 1 to 64"),
])
def test_impossible_combinations_are_refused_with_what_would_work(plan, parallel, gpus, words):
    with pytest.raises(PlanError) as err:
        plan_slots(plan, parallel, gpus)
    assert words in err.value.one_line() and err.value.hint


def test_the_cli_refuses_more_trials_at_once_than_it_can_pin_and_writes_nothing(tmp_path):
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "sweep", "tiny-cpu-demo", "--trials", "3",
                        "--parallel", "2", "--gpus", "2", "--space", "lr=1e-4..1e-3", "--max-steps", "4"],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "--parallel 2" in r.stderr and "--gpus 2" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_resume_keeps_the_parallel_the_sweep_started_with(tmp_path):
    from zerotui.core.sweep.start import prepare_sweep

    paths, _ = prepare_sweep(Plan(name="p", max_steps=4), "lr=1e-4..1e-3", 3, tmp_path / "runs", parallel=2,
                             gpu_count=0)
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "sweep", "--resume", paths.name, "--parallel", "3"],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "started with --parallel 2" in r.stderr and "without --parallel" in r.stderr
    assert not paths.log.exists()  # no driver was started
