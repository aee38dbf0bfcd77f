"""A row of `zerotui runs` (and of the dashboard's runs list) shows a step with the loss and speed logged at
that same step. After a kill -9 of the worker, status.json keeps the last heartbeat's loss while the
supervisor sets its step from the newest step event: the table showed step 10 beside step 5's loss."""
from __future__ import annotations

import json

import pytest
from cli_capture import run

import zerotui.core.run.overview as overview_module
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import new_run_dir, summarise, write_status
from zerotui.core.run.overview import overview

KILLED = "the worker (pid 7575) died without reporting why: killed by SIGKILL"


def step(w, n, loss, speed):
    w.emit("step", step=n, epoch=n / 100, loss=loss, lr=1e-3, grad_norm=1.0, loss_scale=None, skipped=0,
           samples_per_s=1.0, tokens_per_s=speed, tflops=None, step_time=0.1)


def telemetry(w):
    w.emit("telemetry", gpus=[], cpu_percent=100.0, ram_used=1 << 30, ram_total=16 << 30, rss=1 << 29)


def started(w, start_step):
    w.emit("run_started", plan={}, hardware={}, world_size=1, total_steps=100, start_step=start_step,
           resumed_from=f"step{start_step}" if start_step else None)


def killed_run(base, name, write_events, status_step, status_loss, status_speed):
    """A folder as the supervisor leaves it after its worker was killed: the stream's run_finished and a
    final status whose step is the newest step event's and whose loss is the last heartbeat's."""
    paths = new_run_dir(base, name)
    paths.plan.write_text(f"name: {name}\n")
    with EventWriter(paths.events) as w:
        write_events(w)
        telemetry(w)
        w.emit("run_finished", state="failed", reason=KILLED, step=status_step)
    write_status(paths, state="failed", pid=999999999, pids=[], step=status_step, total_steps=100, loss=status_loss,
                 tokens_per_s=status_speed, reason=KILLED)
    return paths


def between_heartbeats(w):
    started(w, 0)
    step(w, 5, 6.6594, 144.0)   # the last heartbeat saw this one
    step(w, 10, 5.9569, 845.0)  # logged, then the kill before the next heartbeat


def after_a_resume(w):
    between_heartbeats(w)
    step(w, 15, 5.5, 900.0)  # the first worker got further than its last checkpoint (10) ...
    started(w, 10)           # ... the resumed one began at 10 and was killed before it logged a step


@pytest.fixture
def runs(tmp_path):
    base = tmp_path / "runs"
    return base, {
        "heartbeat": killed_run(base, "between", between_heartbeats, 10, 6.6594, 144.0),
        "resumed": killed_run(base, "resumed", after_a_resume, 15, None, None),
    }


def rows(capsys, base):
    code, out, _ = run(capsys, "runs", "--runs-dir", str(base), "--json")
    assert code == 0
    return {r["name"]: r for r in json.loads(out)}


def test_step_loss_and_speed_come_from_one_step_report(runs, capsys):
    base, made = runs
    got = rows(capsys, base)
    row = got[made["heartbeat"].name]
    assert (row["step"], row["loss"], row["tokens_per_s"]) == (10, 5.9569, 845.0)
    # a resumed worker that logged nothing yet: where it began, no loss (15 was the killed worker's)
    row = got[made["resumed"].name]
    assert (row["step"], row["loss"], row["tokens_per_s"]) == (10, None, None)
    code, out, _ = run(capsys, "runs", "--runs-dir", str(base))
    line = next(x for x in out.splitlines() if x.startswith(made["heartbeat"].name))
    assert "10/100" in line and "5.9569" in line and "845" in line and "6.6594" not in line


def test_the_dashboards_list_agrees(runs):
    _, made = runs
    row = overview(summarise(made["heartbeat"]))
    assert (row.step, row.loss, row.tokens_per_s) == (10, 5.9569, 845.0)
    row = overview(summarise(made["resumed"]))
    assert (row.step, row.loss, row.tokens_per_s) == (10, None, None)


def test_a_step_report_behind_an_hour_of_telemetry_is_still_found(tmp_path, capsys, monkeypatch):
    def quiet_hour(w):
        between_heartbeats(w)
        for _ in range(200):
            telemetry(w)

    base = tmp_path / "runs"
    paths = killed_run(base, "paused", quiet_hour, 10, 6.6594, 144.0)
    monkeypatch.setattr(overview_module, "NEAR_TAIL_BYTES", 1 << 10)  # both tails: telemetry only
    monkeypatch.setattr(overview_module, "TAIL_BYTES", 4 << 10)
    row = rows(capsys, base)[paths.name]
    assert (row["step"], row["loss"], row["tokens_per_s"]) == (10, 5.9569, 845.0)


def test_without_step_reports_the_status_stands(tmp_path, capsys):
    base = tmp_path / "runs"
    paths = killed_run(base, "early", lambda w: None, 7, 2.0, 50.0)
    row = rows(capsys, base)[paths.name]
    assert (row["step"], row["loss"], row["tokens_per_s"]) == (7, 2.0, 50.0)


def test_an_eval_of_steps_a_restart_redid_is_not_shown_as_the_runs_eval(tmp_path, capsys):
    """`resume --restart` trains from step 0 again: the EVAL column kept the first session's eval at step 40,
    of weights that no longer exist. An eval at or below where the newest worker began still stands."""
    base = tmp_path / "runs"

    def evals_then(start_step):
        def write(w):
            started(w, 0)
            step(w, 40, 3.0, 800.0)
            w.emit("eval", step=40, loss=2.5, perplexity=12.18)
            started(w, start_step)
        return write

    restarted = killed_run(base, "restarted", evals_then(0), 40, None, None)
    resumed = killed_run(base, "resumed-at-40", evals_then(40), 40, None, None)
    got = rows(capsys, base)
    assert got[restarted.name]["eval_loss"] is None
    assert got[resumed.name]["eval_loss"] == 2.5


def test_a_resumed_run_shows_no_reason_from_the_attempt_before(tmp_path):
    """A run stopped, then resumed and training: the first attempt's run_finished ("stop requested") is
    not this attempt's reason (the dashboard's runs list showed "running: stop requested by dashboard")."""
    paths = new_run_dir(tmp_path, "resumed")
    paths.plan.write_text("name: resumed\n")
    with EventWriter(paths.events) as w:
        started(w, 0)
        step(w, 5, 6.6, 100.0)
        w.emit("run_finished", state="stopped", reason="stop requested by dashboard", step=5)
        started(w, 5)
        step(w, 10, 6.0, 120.0)
    write_status(paths, state="running", pid=999999999, pids=[], step=10, total_steps=100, loss=6.0)
    assert overview(summarise(paths)).reason == ""

    with EventWriter(paths.events) as w:  # the resumed attempt's own end is its reason
        w.emit("run_finished", state="stopped", reason="stop requested by zerotui stop", step=10)
    assert overview(summarise(paths)).reason == "stop requested by zerotui stop"
