"""A trial's launch warnings (checkpoints that cannot all fit, ds_overrides keys DeepSpeed ignores, ...)
reach the sweep's user, naming the trial: in the driver's output (the terminal of `--foreground`, else
driver.log) and in `zerotui sweep --show`, not only in the trial's worker.log. ``start_run`` and
``resume_run`` are replaced by stand-ins that warn as the real ones do, through ``warn``."""
from __future__ import annotations

import os
import time

import optuna
from zerotui.core.errors import PlanError
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import RunPaths, new_run_dir, write_status
from zerotui.core.sweep import driver as drv
from zerotui.core.sweep.folder import SweepPaths
from zerotui.core.sweep.report import summary
from sweep_fixture import empty_sweep

ROOM = "the 3 checkpoints kept need 9.1 GiB, but the runs folder has 4.0 GiB free (keep_checkpoints: 1 fits)"
KEYS = "ds_overrides: DeepSpeed ignores the key 'zero_optimisation' (did you mean 'zero_optimization'?)"


def _sweep(tmp_path, trials: int) -> SweepPaths:
    return empty_sweep(tmp_path, trials, max_steps=4)


def _finish(run: RunPaths, loss: float) -> None:
    with EventWriter(run.events) as ev:
        ev.emit("eval", step=4, loss=loss)
        ev.emit("run_finished", state="completed", reason="test", step=4)
    write_status(run, state="completed", heartbeat=time.time(), pid=os.getpid())


def test_each_trials_launch_warnings_are_in_the_sweeps_output_and_show(tmp_path, monkeypatch, user_presets, capsys):
    paths = _sweep(tmp_path, trials=2)
    runs = tmp_path / "runs"

    def start_run(plan, runs_dir=None, force=False, warn=None, **_k):
        number = int(plan.name.rsplit("-t", 1)[1])
        if warn is not None:  # as the real one: told the warnings of a launch that goes ahead
            warn(ROOM if number == 0 else KEYS)
        run = new_run_dir(runs, plan.name)
        _finish(run, 5.0 + number)
        return run

    monkeypatch.setattr("zerotui.core.run.start.start_run", start_run)
    monkeypatch.setattr(drv, "POLL_S", 0.01)
    lines: list[str] = []
    assert drv.Driver(paths, log=lines.append, gpu_count=0).run() == 0
    assert f"trial 0: warning: {ROOM}" in lines and f"trial 1: warning: {KEYS}" in lines
    # Right after the line that names the trial's run, so the two read together.
    named = next(i for i, ln in enumerate(lines) if ln.startswith("trial 0: {"))
    assert lines[named + 1] == f"trial 0: warning: {ROOM}"
    assert [t["warnings"] for t in summary(paths)["trials"]] == [[ROOM], [KEYS]]

    from zerotui.cli.sweep_table import show

    capsys.readouterr()
    show(paths, as_json=False)
    out = capsys.readouterr().out.splitlines()
    row = next(i for i, ln in enumerate(out) if ln.strip().startswith("t0 "))
    assert out[row + 1].strip() == f"warning: {ROOM}"


def test_a_trial_that_could_not_start_still_says_what_its_launch_warned_of(tmp_path, monkeypatch, user_presets):
    paths = _sweep(tmp_path, trials=1)

    def start_run(plan, warn=None, **_k):
        if warn is not None:
            warn(ROOM)
        raise PlanError("the plan does not fit", "lower micro_batch")

    monkeypatch.setattr("zerotui.core.run.start.start_run", start_run)
    lines: list[str] = []
    drv.Driver(paths, log=lines.append, gpu_count=0).run()
    assert lines[:2] == [f"trial 0: warning: {ROOM}",
                         "trial 0 ({'lr': %r}) could not start: the plan does not fit (lower micro_batch)"
                         % summary(paths)["trials"][0]["values"]["lr"]]


def test_a_resumed_trials_warnings_name_it(tmp_path, monkeypatch, user_presets):
    """`zerotui sweep --resume`: a trial whose run was stopped is resumed; what the resume warned of is
    said with the trial's number."""
    paths = _sweep(tmp_path, trials=1)
    stopped = new_run_dir(tmp_path / "runs", "s-t0")
    write_status(stopped, state="stopped", heartbeat=time.time())
    t = drv.open_study(paths).ask({"lr": optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)})
    t.set_user_attr("run", stopped.name)

    def resume_run(run, force=False, warn=None, **_k):
        if warn is not None:
            warn(ROOM)
        _finish(run, 5.0)
        return run

    monkeypatch.setattr("zerotui.core.run.start.resume_run", resume_run)
    monkeypatch.setattr(drv, "POLL_S", 0.01)
    lines: list[str] = []
    assert drv.Driver(paths, log=lines.append, gpu_count=0).run() == 0
    assert f"trial 0: warning: {ROOM}" in lines
