"""Stopping a sweep (Ctrl-C of `zerotui sweep --foreground`, `zerotui sweep --stop`): the driver tells each
running trial's run to stop through its control file (with a checkpoint; a second signal: at once), marks
the trial it ended as stopped rather than running, ends with one line naming the trial and the resume
command, and a resumed driver picks the trial up again. The runs are the real folders (status.json,
events.jsonl, control.jsonl); a "worker" that obeys control.jsonl from the driver's own poll replaces the
real one (tests/unit/test_sweep_ctrl_c.py stops a real one)."""
from __future__ import annotations

import os
import signal
import time

import pytest
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import RunPaths, new_run_dir, read_control, write_status
from zerotui.core.sweep import driver as drv
from zerotui.core.sweep.folder import SweepPaths, read_status
from zerotui.core.sweep.report import progress, summary
from sweep_fixture import empty_sweep


@pytest.fixture(autouse=True)
def _keep_signals():
    """Driver.run installs its own handlers; put the test process's back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def _sweep(tmp_path, trials: int = 3) -> SweepPaths:
    return empty_sweep(tmp_path, trials, max_steps=8)


def _end(run: RunPaths, state: str, step: int, evals: dict[int, float]) -> None:
    with EventWriter(run.events) as ev:
        for s, loss in evals.items():
            ev.emit("eval", step=s, loss=loss)
        ev.emit("run_finished", state=state, reason="test", step=step)
    write_status(run, state=state, step=step, heartbeat=time.time(), pid=os.getpid())


def _commands(run: RunPaths) -> list[str]:
    return [c["command"] for c in read_control(run)[0]]


class FakeWorker:
    """The trial runs' workers: each obeys control.jsonl (stop: ends stopped at step 3 after its eval at 2;
    stop-now likewise) once ``obey()`` says so, and a run nobody stops completes after ``patience`` polls."""

    def __init__(self, monkeypatch, runs, patience: int = 200, on_poll=None, on_start=None,
                 obey=lambda: True) -> None:
        self.runs, self.patience, self.on_poll, self.on_start, self.obey = runs, patience, on_poll, on_start, obey
        self.started: list[RunPaths] = []
        self.polls = 0
        real_poll = drv.TrialRun.poll
        worker = self

        def start(driver, plan):
            run = new_run_dir(runs, plan.name)
            write_status(run, state="running", step=2, heartbeat=time.time(), pid=os.getpid())
            worker.started.append(run)
            if worker.on_start:
                worker.on_start(driver, run)
            return run

        def poll(tr, log):
            worker.polls += 1
            if worker.on_poll:
                worker.on_poll(worker.polls)
            if not tr.run.events.exists():
                if _commands(tr.run) and worker.obey():
                    _end(tr.run, "stopped", 3, {2: 6.0})
                elif worker.polls > worker.patience:
                    _end(tr.run, "completed", 8, {2: 6.0, 8: 5.0})
            return real_poll(tr, log)

        monkeypatch.setattr(drv.Driver, "_start", start)
        monkeypatch.setattr(drv.TrialRun, "poll", poll)
        monkeypatch.setattr(drv, "POLL_S", 0.01)


def test_ctrl_c_stops_the_running_trial_and_marks_it_stopped_not_running(tmp_path, monkeypatch, user_presets):
    paths = _sweep(tmp_path)
    worker = FakeWorker(monkeypatch, tmp_path / "runs",
                        on_poll=lambda n: n == 3 and os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C
    lines: list[str] = []
    assert drv.Driver(paths, log=lines.append, gpu_count=0).run() == 0
    run = worker.started[0]
    assert len(worker.started) == 1 and _commands(run) == ["stop"]  # graceful: a checkpoint first
    # The sweep's status: stopped, nothing listed as running, the trial named as interrupted.
    st = read_status(paths)
    assert st["state"] == "stopped" and "running" not in st
    assert st["interrupted"] == [{"trial": 0, "run": run.name, "state": "stopped", "step": 3}]
    s = summary(paths)
    assert [t["state"] for t in s["trials"]] == ["stopped"] and s["running"] == 0
    assert progress(s) == "0 of 3 trials done, 1 stopped"
    assert any(ln.startswith("stopping (SIGINT): trial 0") for ln in lines)
    end = lines[-1]  # one line: what happened and how to go on
    assert f"trial 0 (run {run.name}) stopped at step 3" in end and f"zerotui sweep --resume {paths.name}" in end

    # `zerotui sweep --resume`: the stopped trial's run is resumed as the same trial, then the rest run.
    resumed = []

    def resume(r, **_k):
        resumed.append(r.name)
        (r.root / "events.jsonl").unlink()
        _end(r, "completed", 8, {8: 5.5})
        return r

    monkeypatch.setattr("zerotui.core.run.start.resume_run", resume)
    worker.patience = 0
    assert drv.Driver(paths, log=lines.append, gpu_count=0).run() == 0
    assert resumed == [run.name]
    trials = drv.open_study(paths).get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3 and trials[0].value == 5.5
    assert [t["state"] for t in summary(paths)["trials"]] == ["complete"] * 3


def test_a_second_ctrl_c_stops_at_once(tmp_path, monkeypatch, user_presets):
    paths = _sweep(tmp_path)
    sent = []

    def ctrl_c(n):
        if n in (3, 4):
            sent.append(n)
            os.kill(os.getpid(), signal.SIGINT)

    # The worker takes its time to save: it ends only once both signals were sent.
    worker = FakeWorker(monkeypatch, tmp_path / "runs", on_poll=ctrl_c, obey=lambda: len(sent) == 2)
    lines: list[str] = []
    drv.Driver(paths, log=lines.append, gpu_count=0).run()
    assert _commands(worker.started[0]) == ["stop", "stop-now"]
    assert any(ln.startswith("stopping at once (SIGINT again): trial 0") for ln in lines)


def test_a_trial_whose_launch_was_under_way_at_ctrl_c_is_stopped_too(tmp_path, monkeypatch, user_presets):
    """The signal came while start_run was launching the trial: the trial was not yet among those the
    handler stopped, and used to train to its end while the sweep waited for it."""
    paths = _sweep(tmp_path)
    worker = FakeWorker(monkeypatch, tmp_path / "runs", patience=50,
                        on_start=lambda d, r: os.kill(os.getpid(), signal.SIGINT))
    drv.Driver(paths, log=lambda m: None, gpu_count=0).run()
    assert len(worker.started) == 1 and _commands(worker.started[0]) == ["stop"]
    assert summary(paths)["trials"][0]["state"] == "stopped"


def test_a_stop_before_the_driver_began_starts_nothing(tmp_path, monkeypatch, user_presets):
    """SIGTERM while the driver still opens the study (``main`` records it): no trial asked, and the sweep
    ends stopped with the resume command, not a KeyboardInterrupt traceback."""
    paths = _sweep(tmp_path)
    worker = FakeWorker(monkeypatch, tmp_path / "runs")
    lines: list[str] = []
    assert drv.Driver(paths, log=lines.append, gpu_count=0).run(early=[signal.SIGTERM]) == 0
    assert worker.started == [] and read_status(paths)["state"] == "stopped"
    assert f"zerotui sweep --resume {paths.name}" in lines[-1]
