"""`zerotui sweep` end to end on the tiny model with the real engine: three trials, each a normal run in the
runs list, Optuna's study in SQLite, eval losses reported, the best plan saved as a preset that loads."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from zerotui.core.plan.presets import load_preset
from zerotui.core.run.folder import RunPaths, run_state
from zerotui.core.sweep.folder import find_sweep


def _zerotui(tmp_path, *argv, timeout=900):
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(tmp_path / "runs"), ZEROTUI_PRESETS_DIR=str(tmp_path / "presets"),
               ZEROTUI_CACHE_DIR=str(tmp_path / "cache"),  # the sweep's spare workers: its own
               ZEROTUI_SPARE="1")  # on the CPU too (by itself a sweep keeps spares for GPU trials only)
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_a_three_trial_sweep_of_the_tiny_model(tmp_path):
    """... and trials after the first start on a spare worker the driver started while the one before
    trained (core/sweep/spares.py); none is left behind."""
    r = _zerotui(tmp_path, "sweep", "tiny-cpu-demo", "--trials", "3", "--space", "lr=1e-4..3e-3:log,grad_accum=1,2",
                 "--max-steps", "8", "--eval-interval", "4", "--no-save-final", "--foreground")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    show = _zerotui(tmp_path, "sweep", "--show", "--json")
    assert show.returncode == 0, show.stderr
    s = json.loads(show.stdout)
    assert s["state"] == "completed" and len(s["trials"]) == 3
    states = [t["state"] for t in s["trials"]]
    assert set(states) <= {"complete", "pruned"} and states[:2] == ["complete", "complete"]  # 2 startup trials
    for t in s["trials"]:
        assert 1e-4 <= t["values"]["lr"] <= 3e-3 and t["values"]["grad_accum"] in (1, 2)
        run = RunPaths(tmp_path / "runs" / t["run"])
        assert run_state(run) in ("completed", "stopped")  # a pruned trial's run is stopped at once
        assert t["evals"] and t["evals"][0][0] == 4  # the eval at step 4 reached the study
        assert t["overhead_s"] is not None and t["overhead_s"] >= 0
    taken = [f"takes run {tmp_path / 'runs' / t['run']}" in (tmp_path / "runs" / t["run"] / "worker.log").read_text()
             for t in s["trials"]]
    assert taken == [False, True, True], r.stdout
    assert "ended with the sweep" not in r.stdout  # the last trial started none: nothing to end
    assert not list((tmp_path / "cache" / "spares").glob("spare-*"))
    best = min((t for t in s["trials"] if t["state"] == "complete"), key=lambda t: t["value"])
    assert s["best"]["number"] == best["number"]
    preset = load_preset(s["preset"])
    assert preset.lr == best["values"]["lr"] and preset.grad_accum == best["values"]["grad_accum"]
    assert find_sweep(tmp_path / "runs", None).db.is_file()


def test_a_bad_space_is_refused_before_anything_runs(tmp_path):
    for space, words in (("lr=3e-4..1e-5", "is empty"), ("nosuch=1,2", "not a plan field"),
                         ("lr=0..1e-3:log", "above 0"), ("grad_accum=0,2", "grad_accum=0"),
                         ("model=a,b", "not a plan field")):
        r = _zerotui(tmp_path, "sweep", "tiny-cpu-demo", "--trials", "2", "--space", space, "--max-steps", "4")
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr, (space, r.stderr)
    from zerotui.core.plan.schema import Plan

    plan = tmp_path / "long.yaml"  # no max_steps: a whole epoch per trial
    plan.write_text(Plan(name="long").to_yaml())
    r = _zerotui(tmp_path, "sweep", str(plan), "--trials", "2", "--space", "lr=1e-4..1e-3")
    assert r.returncode == 2 and "--max-steps" in r.stderr
    assert not (tmp_path / "runs" / "sweeps").exists() or not any((tmp_path / "runs" / "sweeps").iterdir())
