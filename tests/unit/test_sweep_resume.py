"""A restarted sweep driver (core/sweep/driver.py) settles the trials its predecessor left running: a run
that was stopped or lost is resumed and followed, one still going is followed, one whose run is gone or
cannot resume is failed — and the driver then goes on with new trials up to the count."""
from __future__ import annotations

import optuna

from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths, new_run_dir, write_status
from zerotui.core.sweep import driver as drv
from zerotui.core.sweep.folder import SweepPaths, write_spec
from zerotui.core.sweep.space import Param


def test_leftover_trials_are_resumed_followed_or_failed(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    paths = SweepPaths(tmp_path / "sweeps" / "s")
    paths.root.mkdir(parents=True)
    write_spec(paths, {"plan": Plan(name="s", max_steps=4).to_dict(), "trials": 4, "runs_dir": str(runs),
                       "space": [Param("lr", 1e-5, 1e-3, log=True).to_dict()], "seed": 0})
    study = drv.open_study(paths)
    stopped, going = new_run_dir(runs, "s-t0"), new_run_dir(runs, "s-t1")
    write_status(stopped, state="stopped")
    write_status(going, state="running")
    for name in (stopped.name, going.name, "gone-t2"):
        t = study.ask({"lr": optuna.distributions.FloatDistribution(1e-5, 1e-3, log=True)})
        t.set_user_attr("run", name)
    resumed, followed, new = [], [], []
    monkeypatch.setattr("zerotui.core.run.start.resume_run", lambda run, **k: resumed.append(run.name) or run)
    monkeypatch.setattr(drv.Driver, "_follow",
                        lambda self, run, trial=None: followed.append(run.name) or ("completed", 4.0 + len(followed), False))
    monkeypatch.setattr(drv.Driver, "_start", lambda self, plan: new.append(plan.name) or RunPaths(runs / plan.name))
    monkeypatch.setattr(drv.Driver, "_save_best", lambda self: None)
    assert drv.Driver(paths, log=lambda m: None).run() == 0
    states = {t.user_attrs["run"]: (t.state.name, t.value) for t in drv.open_study(paths).get_trials()}
    assert resumed == [stopped.name]  # only the stopped one needed a new worker
    assert followed[:2] == [stopped.name, going.name]
    assert states[stopped.name] == ("COMPLETE", 5.0) and states[going.name] == ("COMPLETE", 6.0)
    assert states["gone-t2"][0] == "FAIL"
    assert new == ["s-t3"]  # then one new trial makes four
