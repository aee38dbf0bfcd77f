"""A restarted sweep driver (core/sweep/driver.py) settles the trials its predecessor left running: a run
that was stopped or lost is resumed and followed, one still going is followed, one whose run is gone is
failed — all from the runs' real files (status.json, events.jsonl) — and the driver then goes on with new
trials up to the count, at most ``parallel`` at a time. Starting a worker is the one part replaced here
(tests/deepspeed/test_sweep_parallel.py starts real ones)."""
from __future__ import annotations

import os
import time

import optuna
from zerotui.core.events.stream import EventWriter
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths, new_run_dir, write_status
from zerotui.core.sweep import driver as drv
from zerotui.core.sweep.folder import SweepPaths, read_status, write_spec
from zerotui.core.sweep.space import Param


def _finish(run: RunPaths, losses: dict[int, float], state: str = "completed") -> None:
    """What a worker and its supervisor leave behind: evals, run_finished, a final status."""
    with EventWriter(run.events) as ev:
        for step, loss in losses.items():
            ev.emit("eval", step=step, loss=loss)
        ev.emit("run_finished", state=state, reason="test", step=max(losses or {0: 0}))
    write_status(run, state=state, heartbeat=time.time(), pid=os.getpid())


def _sweep(tmp_path, trials: int, parallel: int) -> tuple[SweepPaths, object]:
    paths = SweepPaths(tmp_path / "sweeps" / "s")
    paths.root.mkdir(parents=True)
    write_spec(paths, {"plan": Plan(name="s", max_steps=4).to_dict(), "trials": trials, "parallel": parallel,
                       "runs_dir": str(tmp_path / "runs"), "seed": 0,
                       "space": [Param("lr", 1e-5, 1e-3, log=True).to_dict()]})
    return paths, drv.open_study(paths)


def test_leftover_trials_are_resumed_followed_or_failed(tmp_path, monkeypatch, user_presets):
    runs = tmp_path / "runs"
    paths, study = _sweep(tmp_path, trials=4, parallel=1)
    stopped, going = new_run_dir(runs, "s-t0"), new_run_dir(runs, "s-t1")
    write_status(stopped, state="stopped", heartbeat=time.time())
    _finish(going, {2: 6.5, 4: 6.0})  # it kept going while no driver watched, and finished
    for name in (stopped.name, going.name, "gone-t2"):
        t = study.ask({"lr": optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)})
        t.set_user_attr("run", name)
    resumed, new = [], []

    def resume(run, **_k):
        resumed.append(run.name)
        _finish(run, {4: 5.0})
        return run

    def start(self, plan):
        run = new_run_dir(runs, plan.name)
        new.append(plan.name)
        _finish(run, {4: 5.5})
        return run

    monkeypatch.setattr("zerotui.core.run.start.resume_run", resume)
    monkeypatch.setattr(drv.Driver, "_start", start)
    monkeypatch.setattr(drv, "POLL_S", 0.01)
    assert drv.Driver(paths, log=lambda m: None, gpu_count=0).run() == 0
    trials = drv.open_study(paths).get_trials()
    states = {t.user_attrs["run"]: (t.state.name, t.value) for t in trials}
    assert resumed == [stopped.name]  # only the stopped one needed a new worker
    assert states[stopped.name] == ("COMPLETE", 5.0) and states[going.name] == ("COMPLETE", 6.0)
    assert states["gone-t2"][0] == "FAIL"
    assert new == ["s-t3"] and len(trials) == 4  # then one new trial makes four
    # The going run's evals reached its trial although the driver that asked it was gone.
    assert next(t for t in trials if t.user_attrs["run"] == going.name).intermediate_values == {2: 6.5, 4: 6.0}
    assert read_status(paths)["state"] == "completed"
    assert [p.name for p in user_presets.iterdir()] == ["s-best.yaml"]  # the best plan, saved as a preset


def test_two_slots_run_two_trials_at_once_and_a_finished_one_frees_its_slot(tmp_path, monkeypatch, user_presets):
    runs = tmp_path / "runs"
    paths, _ = _sweep(tmp_path, trials=3, parallel=2)
    started: list[tuple[str, int]] = []  # (trial plan name, trials running when it started)
    live: list[tuple[RunPaths, object]] = []

    def start(self, plan):
        run = new_run_dir(runs, plan.name)
        write_status(run, state="running", heartbeat=time.time(), pid=os.getpid())
        started.append((plan.name, len(self.active)))
        assert plan.gpus == 1 and plan.gpu_ids is None  # a CPU slot: one process, no GPU index
        live.append((run, plan))
        return run

    polls = {"n": 0}
    real_poll = drv.TrialRun.poll

    def poll(self, log):
        polls["n"] += 1
        if polls["n"] == 3 and live:  # the first trial's worker finishes while the second still runs
            _finish(live[0][0], {4: 5.0})
        elif polls["n"] > 6:
            for i, (run, _) in enumerate(live):
                if not run.events.exists():  # better than the median so far: not pruned
                    _finish(run, {4: 5.2 - 0.3 * i})
        return real_poll(self, log)

    monkeypatch.setattr(drv.Driver, "_start", start)
    monkeypatch.setattr(drv.TrialRun, "poll", poll)
    monkeypatch.setattr(drv, "POLL_S", 0.01)
    assert drv.Driver(paths, log=lambda m: None, gpu_count=0).run() == 0
    # Two started at once (the second while the first ran); the third only once a slot was free.
    assert [n for _, n in started] == [0, 1, 1]
    trials = drv.open_study(paths).get_trials()
    assert len(trials) == 3 and all(t.state.name == "COMPLETE" for t in trials)
    assert [t.user_attrs["slot"] for t in trials] == ["slot 0", "slot 1", "slot 0"]


def test_a_restarted_driver_does_not_replay_the_values_already_tried(tmp_path, monkeypatch, user_presets):
    """Seen in the end-to-end test: the resumed driver's first new trial had trial 0's learning rate."""
    runs = tmp_path / "runs"
    paths, _ = _sweep(tmp_path, trials=2, parallel=1)
    lrs = []

    def start(self, plan):
        lrs.append(plan.lr)
        run = new_run_dir(runs, plan.name)
        _finish(run, {4: 5.0})
        if len(lrs) == 1:
            self.stopping = True  # the first driver ends after one trial, as a killed one would
        return run

    monkeypatch.setattr(drv.Driver, "_start", start)
    monkeypatch.setattr(drv, "POLL_S", 0.01)
    drv.Driver(paths, log=lambda m: None, gpu_count=0).run()
    assert drv.Driver(paths, log=lambda m: None, gpu_count=0).run() == 0
    assert len(lrs) == 2 and lrs[0] != lrs[1]
    assert len(drv.open_study(paths).get_trials()) == 2
