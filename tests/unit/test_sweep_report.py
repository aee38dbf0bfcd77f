"""`zerotui sweep --show` and the sweep screen with several trials running at once (--parallel): each
running trial shows its slot and its latest eval loss, and the count of running trials is in the headline."""
from __future__ import annotations

import os
import subprocess
import sys

from optuna.distributions import FloatDistribution
from zerotui.core.plan.schema import Plan
from zerotui.core.sweep.driver import open_study
from zerotui.core.sweep.folder import SweepPaths, write_spec, write_status
from zerotui.core.sweep.report import progress, summary, trial_cells
from zerotui.core.sweep.space import Param


def _two_running(tmp_path) -> SweepPaths:
    paths = SweepPaths(tmp_path / "runs" / "sweeps" / "20261201-120000-p")
    paths.root.mkdir(parents=True)
    write_spec(paths, {"plan": Plan(name="p", max_steps=8).to_dict(), "trials": 5, "parallel": 2, "seed": 0,
                       "runs_dir": str(tmp_path / "runs"), "space": [Param("lr", 1e-4, 1e-3, log=True).to_dict()]})
    study = open_study(paths)
    dist = {"lr": FloatDistribution(1e-4, 1e-3, log=True)}
    done = study.ask(dist)
    done.report(5.9, 4)
    study.tell(done, 5.5)
    for n, slot in ((1, "gpu 0"), (2, "gpu 1")):
        t = study.ask(dist)
        t.set_user_attr("run", f"20261201-12000{n}-p-t{n}")
        t.set_user_attr("slot", slot)
        if n == 1:
            t.report(6.25, 4)
    write_status(paths, state="running")  # this process's pid: a live driver
    return paths


def test_several_running_trials_show_their_gpu_and_latest_eval(tmp_path):
    s = summary(_two_running(tmp_path))
    assert s["running"] == 2 and s["parallel"] == 2 and s["state"] == "running"
    assert progress(s) == "1 of 5 trials done, 2 running"
    rows = [trial_cells(t) for t in s["trials"]]
    assert rows[0][1:3] == ("complete", "5.5")
    assert rows[1][1:3] == ("running", "6.25 @4") and rows[1][4].endswith("-p-t1 (gpu 0)")
    assert rows[2][1:3] == ("running", "-") and rows[2][4].endswith("-p-t2 (gpu 1)")


def test_the_show_table_lists_both_running_trials(tmp_path):
    paths = _two_running(tmp_path)
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "sweep", "--show", paths.name], env=env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "1 of 5 trials done, 2 running" in lines[0]
    assert [ln.split()[1] for ln in lines[1:4]] == ["complete", "running", "running"]
    assert "(gpu 0)" in lines[2] and "6.25 @4" in lines[2] and "(gpu 1)" in lines[3]


def test_a_reader_never_creates_the_study_and_the_start_creates_it_before_the_driver(tmp_path, monkeypatch):
    """Optuna makes its tables on first open; two processes doing that at once collide. So `--show` before
    the study exists reads no trials (and writes nothing), and the start makes the tables itself."""
    from zerotui.core.sweep import start as sweep_start

    paths, _ = sweep_start.prepare_sweep(Plan(name="p", max_steps=8, eval_fraction=0.1), "lr=1e-4..1e-3:log", 3,
                                         tmp_path / "runs")
    s = summary(paths)
    assert s["trials"] == [] and progress(s).startswith("0 of 3 trials done")
    assert not paths.db.exists()

    seen = {}

    class _NoDriver:  # what the driver would find when it starts: the study already there
        def __init__(self, argv, **_kw):
            seen["db"] = paths.db.is_file()
            self.pid = 4242

    monkeypatch.setattr(sweep_start.subprocess, "Popen", _NoDriver)
    assert sweep_start.start_driver(paths) == 4242 and seen == {"db": True}
    assert summary(paths)["trials"] == []
