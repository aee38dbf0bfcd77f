"""`zerotui resume RUN` of a run with no checkpoint says once that it starts again from step 0. In the
foreground the worker says so itself when it finds no checkpoint; the command said it too beforehand,
in other words, so the same fact came out twice."""
from __future__ import annotations

import pytest
from cli_capture import run

import zerotui.core.run.start as start
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import new_run_dir, write_status

#: what core/train/engine.py emits when a resumed worker finds nothing to load
WORKER_LINE = "no complete checkpoint to resume from: starting at step 0"


@pytest.fixture
def crashed_run(tmp_path):
    paths = new_run_dir(tmp_path / "runs", "c")
    paths.plan.write_text("name: c\n")
    write_status(paths, state="failed", step=0)
    return paths


def _resumed_worker(paths, **_options):
    with EventWriter(paths.events) as w:
        w.emit("phase", name="loading model", done=None, total=None)
        w.emit("log", message=WORKER_LINE)
        w.emit("run_started", plan={}, hardware={}, world_size=1, total_steps=4, start_step=0, resumed_from=None)
        w.emit("run_finished", state="completed", reason="completed at 4", step=4)
    write_status(paths, state="completed", step=4)
    return paths


def _step_zero_lines(text):
    return [line for line in text.splitlines() if "step 0" in line]


def test_foreground_says_step_0_once(crashed_run, capsys, monkeypatch):
    monkeypatch.setattr(start, "resume_run", _resumed_worker)
    monkeypatch.setattr(start, "last_checkpoint_step", lambda _paths: None)
    code, out, err = run(capsys, "resume", crashed_run.name, "--foreground",
                         "--runs-dir", str(crashed_run.root.parent))
    assert code == 0 and err == ""
    assert _step_zero_lines(out) == [WORKER_LINE]


def test_detached_still_says_it(crashed_run, capsys, monkeypatch):
    # no follow, so the worker's line is not printed: the command's own is the only one
    monkeypatch.setattr(start, "resume_run", lambda paths, **_options: paths)
    monkeypatch.setattr(start, "last_checkpoint_step", lambda _paths: None)
    code, out, _ = run(capsys, "resume", crashed_run.name, "--runs-dir", str(crashed_run.root.parent))
    assert code == 0
    assert _step_zero_lines(out) == ["no complete checkpoint: the run starts again from step 0"]
    assert f"resumed run {crashed_run.name}" in out
