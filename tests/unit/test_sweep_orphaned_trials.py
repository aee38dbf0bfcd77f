"""A sweep whose driver was killed with -9 (or a reboot): Optuna still holds its trials RUNNING, but
`zerotui sweep --show` says what each trial's run really is by its own folder, as `zerotui runs` does (a
live run stays running, a dead one is lost, a finished one completed), suggests `--resume`, and writes
nothing in the sweep folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from optuna.distributions import FloatDistribution
from zerotui.core.events.stream import EventWriter
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths
from zerotui.core.run.folder import write_status as write_run_status
from zerotui.core.sweep.driver import open_study
from zerotui.core.sweep.folder import SweepPaths, write_spec, write_status
from zerotui.core.sweep.report import progress, summary, trial_cells
from zerotui.core.sweep.space import Param


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _run(runs, name: str, **status) -> None:
    paths = RunPaths(runs / name)
    (paths.root / "checkpoints").mkdir(parents=True)
    with EventWriter(paths.events) as ev:
        ev.emit("eval", step=2, loss=6.5)
        if status.get("state") == "completed":
            ev.emit("run_finished", state="completed", reason="test", step=4)
    write_run_status(paths, heartbeat=time.time(), step=2, **status)


def _killed_sweep(tmp_path) -> SweepPaths:
    """Trial 0 complete; trials 1-5 RUNNING in the study, their driver dead: 1's run dead without a last
    word (lost), 2's completed, 3's still training (this test's pid), 4 without a run folder, 5's stopped."""
    runs = tmp_path / "runs"
    paths = SweepPaths(runs / "sweeps" / "20261201-120000-k")
    paths.root.mkdir(parents=True)
    write_spec(paths, {"plan": Plan(name="k", max_steps=8).to_dict(), "trials": 6, "parallel": 3, "seed": 0,
                       "runs_dir": str(runs), "space": [Param("lr", 1e-4, 1e-3, log=True).to_dict()]})
    study = open_study(paths)
    dist = {"lr": FloatDistribution(1e-4, 1e-3, log=True)}
    study.tell(study.ask(dist), 5.5)
    dead = _dead_pid()
    runs_state = {1: dict(state="running", pid=dead, pids=[dead]),
                  2: dict(state="completed", pid=dead, pids=[dead]),
                  3: dict(state="running", pid=os.getpid(), pids=[os.getpid()]),
                  5: dict(state="stopped", pid=dead, pids=[dead])}
    for n in (1, 2, 3, 4, 5):
        t = study.ask(dist)
        t.set_user_attr("run", f"20261201-12000{n}-k-t{n}")
        t.set_user_attr("slot", f"gpu {n - 1}")
        if n == 1:
            t.report(6.5, 2)
        if n in runs_state:
            _run(runs, f"20261201-12000{n}-k-t{n}", **runs_state[n])
    write_status(paths, state="running")
    # the driver's status as a kill -9 leaves it: "running", its pid gone
    status = json.loads(paths.status.read_text())
    paths.status.write_text(json.dumps({**status, "pid": dead}))
    return paths


def _snapshot(root) -> dict:
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in root.iterdir()}


def test_trials_of_a_killed_driver_show_their_runs_own_state(tmp_path):
    s = summary(_killed_sweep(tmp_path))
    assert s["state"] == "lost"
    assert [t["state"] for t in s["trials"]] == ["complete", "lost", "completed", "running", "lost", "stopped"]
    assert [bool(t.get("orphaned")) for t in s["trials"]] == [False, True, True, True, True, True]
    assert s["running"] == 1 and s["orphaned"] == 5 and s["best"]["number"] == 0
    assert progress(s) == "1 of 6 trials done, 1 running, 1 stopped, 3 awaiting --resume"
    rows = [trial_cells(t) for t in s["trials"]]
    assert rows[1][1:3] == ("lost", "6.5 @2")


def test_show_suggests_resume_and_writes_nothing_in_the_sweep_folder(tmp_path):
    paths = _killed_sweep(tmp_path)
    before = _snapshot(paths.root)
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(tmp_path / "runs"))
    cmd = [sys.executable, "-m", "zerotui.cli.main", "sweep", "--show", paths.name]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"sweep {paths.name}: lost, 1 of 6 trials done")
    assert [ln.split()[1] for ln in lines[1:7]] == ["complete", "lost", "completed", "running", "lost", "stopped"]
    assert f"continue with `zerotui sweep --resume {paths.name}`" in r.stdout
    j = subprocess.run(cmd + ["--json"], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert j.returncode == 0, j.stderr
    states = [t["state"] for t in json.loads(j.stdout)["trials"]]
    assert states[1:] == ["lost", "completed", "running", "lost", "stopped"]
    assert _snapshot(paths.root) == before


def test_a_live_driver_keeps_its_trials_running(tmp_path):
    paths = _killed_sweep(tmp_path)
    write_status(paths, state="running")  # this process's pid: a live driver answers for its trials
    s = summary(paths)
    assert s["state"] == "running" and s["orphaned"] == 0
    assert [t["state"] for t in s["trials"]] == ["complete"] + ["running"] * 5


def test_a_failed_driver_that_left_trials_also_suggests_resume(tmp_path, capsys):
    """A driver that ended on an error ("failed") may leave trials RUNNING too: `--resume` takes them up."""
    from zerotui.cli.sweep_table import show

    paths = _killed_sweep(tmp_path)
    status = json.loads(paths.status.read_text())
    paths.status.write_text(json.dumps({**status, "state": "failed"}))
    assert show(paths, as_json=False) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"sweep {paths.name}: failed") and f"`zerotui sweep --resume {paths.name}`" in out
