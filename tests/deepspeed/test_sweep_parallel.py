"""`zerotui sweep --parallel 2` end to end on the tiny model with the real engine, started detached as a user
over SSH would: two trials run at once (two CPU processes here, one per GPU on a GPU machine), then the
driver is SIGKILLed mid-trial together with one trial's run (as a reboot or the OOM killer would), the
other run left going. `zerotui sweep --resume` must then resume the killed trial from its newest checkpoint
as the same trial (same run folder, not asked again), follow the one that kept going, and run the last
trial: the study ends with exactly the trials asked for, all finished."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from zerotui.core.train.checkpoint import newest_complete
from zerotui.core.run.folder import RunPaths, read_status, run_state
from zerotui.core.sweep.folder import find_sweep
from zerotui.core.sweep.folder import read_status as sweep_status
from zerotui.core.sweep.report import summary

TRIALS, STEPS = 3, 16


def _zerotui(tmp_path, *argv, timeout=120):
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(tmp_path / "runs"), ZEROTUI_PRESETS_DIR=str(tmp_path / "presets"))
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)


def _events(run: RunPaths) -> list[dict]:
    out = []
    for line in run.events.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass  # a torn last line of a killed writer
    return out


def _wait(what, until, timeout_s):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        got = until()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _victim(runs, paths):
    """A running trial whose run has a complete checkpoint and has not finished: (trial, run)."""
    for t in summary(paths)["trials"]:
        if t["state"] != "running" or not t["run"]:
            continue
        run = RunPaths(runs / t["run"])
        evs = _events(run) if run.events.exists() else []
        if any(e["type"] == "checkpoint" for e in evs) and not any(e["type"] == "run_finished" for e in evs):
            return t, run
    return None


# Four runs' worth of start-ups (two at once, then the resumed one beside the last trial): longer than
# one run's default limit in pyproject.toml on a 2-core machine.
@pytest.mark.timeout(1500)
def test_a_parallel_sweep_killed_mid_trial_resumes_to_exactly_the_trials_asked(tmp_path):
    runs = tmp_path / "runs"
    r = _zerotui(tmp_path, "sweep", "tiny-cpu-demo", "--trials", str(TRIALS), "--parallel", "2",
                 "--space", "lr=1e-4..3e-3:log", "--max-steps", str(STEPS), "--eval-interval", "4",
                 "--save-interval", "4", "--no-save-final")
    assert r.returncode == 0 and "2 at a time" in r.stdout, r.stdout + r.stderr
    paths = find_sweep(runs, None)

    running = _wait("two trials at once", lambda: [t for t in summary(paths)["trials"] if t["state"] == "running"]
                    if len([t for t in summary(paths)["trials"] if t["state"] == "running"]) == 2 else None, 120)
    assert sorted(t["slot"] for t in running) == ["slot 0", "slot 1"]
    victim, vrun = _wait("a checkpoint in a running trial", lambda: _victim(runs, paths), 900)
    other = next(t for t in running if t["number"] != victim["number"])

    os.kill(sweep_status(paths)["pid"], signal.SIGKILL)
    for pid in read_status(vrun).get("pids") or []:  # the supervisor and its worker: their own session
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _wait("the killed run to read as lost", lambda: run_state(vrun) == "lost", 60)
    assert summary(paths)["state"] == "lost"
    announced = max(e["step"] for e in _events(vrun) if e["type"] == "checkpoint")
    # A checkpoint written in the background can be complete on disk (its marker written) with the kill
    # landing before its event: the resume continues from the newest complete one, as it should.
    killed_at = newest_complete(vrun.checkpoints).step
    assert killed_at >= announced

    r = _zerotui(tmp_path, "sweep", "--resume", paths.name)
    assert r.returncode == 0, r.stdout + r.stderr
    done = _wait("the resumed sweep to finish", lambda: (s := summary(paths))["state"] == "completed" and s, 1200)

    # Exactly the trials asked for, all finished; the killed one was resumed, not failed and asked again.
    assert len(done["trials"]) == TRIALS and done["running"] == 0
    assert all(t["state"] in ("complete", "pruned") for t in done["trials"]), done["trials"]
    again = next(t for t in done["trials"] if t["number"] == victim["number"])
    assert again["run"] == victim["run"] and again["state"] == "complete"
    starts = [e for e in _events(vrun) if e["type"] == "run_started"]
    assert len(starts) == 2 and starts[1]["start_step"] == killed_at >= 4, starts
    assert max(e["step"] for e in _events(vrun) if e["type"] == "step") == STEPS
    assert run_state(vrun) == "completed"
    # The run that was left going was followed to its end, never restarted.
    orun = RunPaths(runs / other["run"])
    assert sum(e["type"] == "run_started" for e in _events(orun)) == 1 and run_state(orun) in ("completed", "stopped")
    # No extra run was started for the killed trial: one run folder per trial.
    assert sorted(t["run"] for t in done["trials"]) == sorted(p.name for p in runs.iterdir() if p.name != "sweeps")
    assert "resumed from its last checkpoint" in paths.log.read_text()
    # The restarted driver's sampler did not replay the first driver's draws.
    assert len({t["values"]["lr"] for t in done["trials"]}) == TRIALS
    # The two first trials really ran side by side: their workers' lives overlap.
    lives = [(e[0]["t"], e[-1]["t"]) for e in (_events(RunPaths(runs / t["run"])) for t in running)]
    assert max(a for a, _ in lives) < min(b for _, b in lives)
    show = _zerotui(tmp_path, "sweep", "--show")
    assert show.returncode == 0 and f"{TRIALS} of {TRIALS} trials done" in show.stdout, show.stdout
