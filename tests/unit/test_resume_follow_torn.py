"""`zerotui resume RUN --foreground` after a run was killed in the middle of writing an event: each line
of the resumed worker appears once. The follow used to start at the file's size, inside the torn line,
which read_lines takes for a file cut and grown back: it read the run's whole history again (its earlier
loading lines first) and stopped at the earlier session's end while the resumed run went on."""
from __future__ import annotations

import pytest
from cli_capture import run

import zerotui.core.run.start as start
from zerotui.core.events.stream import EventWriter, read_new
from zerotui.core.run.folder import new_run_dir, write_status

TORN = b'{"v":1,"t":1.0,"type":"telemetry","gpus":[],"cpu_pe'


def session(w, start_step, end_state, end_step):
    """One worker's life as the stream records it: loading, the start, a step, the supervisor's end."""
    w.emit("phase", name="importing libraries", done=None, total=None)
    w.emit("phase", name="loading model", done=None, total=None)
    w.emit("run_started", plan={}, hardware={}, world_size=1, total_steps=20, start_step=start_step,
           resumed_from=f"step{start_step}" if start_step else None)
    w.emit("step", step=end_step, epoch=0.1, loss=1.5, lr=1e-3, grad_norm=1.0, loss_scale=None, skipped=0,
           samples_per_s=1.0, tokens_per_s=100.0, tflops=None, step_time=0.1)
    w.emit("run_finished", state=end_state, reason=f"{end_state} at {end_step}", step=end_step)


def test_a_writer_ends_a_torn_line_before_its_first_event(tmp_path):
    path = tmp_path / "events.jsonl"
    with EventWriter(path) as w:
        w.emit("log", message="before the kill")
    with open(path, "ab") as fh:
        fh.write(TORN)  # a worker killed in the middle of a line
    with EventWriter(path) as w:  # the next writer: a resumed worker, or the supervisor's run_finished
        w.emit("log", message="after the kill")
    assert [e["message"] for e in read_new(path, 0)[0]] == ["before the kill", "after the kill"]


def test_the_follow_starts_after_the_last_whole_line(tmp_path):
    from zerotui.core.events.stream import whole_lines_end

    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"v":1,"t":1.0,"type":"log","message":"x"}\n' + TORN)
    assert whole_lines_end(path) == path.stat().st_size - len(TORN)
    assert whole_lines_end(tmp_path / "none.jsonl") == 0


@pytest.fixture
def killed_run(tmp_path):
    paths = new_run_dir(tmp_path / "runs", "k")
    paths.plan.write_text("name: k\n")
    with EventWriter(paths.events) as w:
        session(w, 0, "stopped", 8)
    with open(paths.events, "ab") as fh:
        fh.write(TORN)
    write_status(paths, state="failed", step=8)
    return paths


def test_resume_foreground_prints_each_line_once(killed_run, capsys, monkeypatch):
    def resume_run(paths, **_options):
        # the resumed worker and its supervisor, done at once: what the follow then finds in the stream
        with EventWriter(paths.events) as w:
            session(w, 8, "completed", 20)
        write_status(paths, state="completed", step=20)
        return paths

    monkeypatch.setattr(start, "resume_run", resume_run)
    monkeypatch.setattr(start, "last_checkpoint_step", lambda _paths: 8)
    code, out, _ = run(capsys, "resume", killed_run.name, "--foreground", "--runs-dir", str(killed_run.root.parent))
    assert code == 0
    assert out.splitlines() == [
        "continuing from the checkpoint at step 8",
        "[importing libraries]",
        "[loading model]",
        "run started: 20 steps, world size 1, resumed from step8",
        "step 20/20  loss 1.5000  lr 1.00e-03  tok/s 100  step 0.10s",
        "run completed: completed at 20",
    ]
