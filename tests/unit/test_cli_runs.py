"""`zerotui runs`, `zerotui stop`, `zerotui resume` and `zerotui train`'s refusals, as a user types them."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from zerotui.cli.main import main
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import new_run_dir, read_status, write_status

from run_events import events, wait_until
from worker_runs import finish, make_run, start_worker, step_reached


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          timeout=120)


def fake_finished_run(base, name, state, step=5, loss=1.25, reason=""):
    """A run folder as a worker leaves it (real files, written the way the worker writes them)."""
    paths = new_run_dir(base, name)
    paths.plan.write_text(f"name: {name}\n")
    with EventWriter(paths.events) as w:
        w.emit("run_finished", state=state, reason=reason or state)
    now = time.time()
    write_status(paths, state=state, pid=999999999, step=step, total_steps=10, loss=loss, tokens_per_s=1234.5,
                 started=now - 3725, finished=now - 5, reason=reason or state)
    return paths


def fake_lost_run(base, name, ram_fraction=0.5):
    paths = new_run_dir(base, name)
    paths.plan.write_text(f"name: {name}\n")
    paths.events.write_text("")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    write_status(paths, state="running", pid=proc.pid, pids=[proc.pid], step=7, total_steps=10, loss=2.0,
                 started=time.time() - 600, heartbeat=time.time() - 300, ram_fraction=ram_fraction)
    return paths


def test_runs_table_and_json(tmp_path, capsys):
    done = fake_finished_run(tmp_path, "done", "completed", step=10)
    bad = fake_finished_run(tmp_path, "bad", "failed", reason="ValueError in phase tokenising: boom")
    lost = fake_lost_run(tmp_path, "gone", ram_fraction=0.97)
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    header, *rows = out.splitlines()
    assert header.split() == ["RUN", "STATE", "STEP", "LOSS", "EVAL", "TOK/S", "STARTED", "DURATION"]
    row = {line.split()[0]: line for line in rows if line and not line.startswith(" ")}
    assert "completed" in row[done.name] and "10/10" in row[done.name] and "1.2500" in row[done.name]
    assert "1,234" in row[done.name] and "1h 02m" in row[done.name]
    assert "lost (5m 00s ago)" in row[lost.name] or "lost (4m 59s ago)" in row[lost.name] \
        or "lost (5m 01s ago)" in row[lost.name]
    assert "ValueError in phase tokenising: boom" in out
    assert "OOM killer" in out and f"zerotui resume {lost.name}" in out
    assert main(["runs", "--runs-dir", str(tmp_path), "--json"]) == 0
    recs = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert recs[lost.name]["state"] == "lost" and recs[lost.name]["heartbeat_age_s"] >= 299
    assert recs[done.name]["step"] == 10 and recs[done.name]["duration_s"] == pytest.approx(3720, abs=2)
    assert recs[bad.name]["state"] == "failed"


def test_runs_show_the_latest_eval_beside_the_loss(tmp_path, capsys):
    """The newest eval event wins: the loop's (loss and perplexity), then `zerotui eval`'s with ROUGE-L."""
    done = fake_finished_run(tmp_path, "scored", "completed", step=10)
    plain = fake_finished_run(tmp_path, "plain", "completed", step=10)
    with EventWriter(done.events) as w:
        w.emit("eval", step=10, loss=2.5, perplexity=12.18, batches=4)
        w.emit("eval", step=10, loss=2.0, perplexity=7.389, rougeL=0.4125, samples=5, source="final")
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    row = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:] if line}
    assert "ppl 7.389 R-L 0.412" in row[done.name] and "ppl" not in row[plain.name]
    assert main(["runs", "--runs-dir", str(tmp_path), "--json"]) == 0
    recs = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert (recs[done.name]["eval_loss"], recs[done.name]["perplexity"], recs[done.name]["rougeL"]) == (2.0, 7.389, 0.4125)
    assert recs[plain.name]["perplexity"] is None and recs[plain.name]["rougeL"] is None


def test_runs_default_limit_and_all(tmp_path, capsys):
    for i in range(23):
        fake_finished_run(tmp_path, f"r{i:02d}", "stopped")
    main(["runs", "--runs-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "(3 older runs not shown; --all lists them)" in out
    main(["runs", "--runs-dir", str(tmp_path), "--all", "--json"])
    assert len(json.loads(capsys.readouterr().out)) == 23


def test_runs_empty_folder(tmp_path, capsys):
    assert main(["runs", "--runs-dir", str(tmp_path / "none")]) == 0
    assert "no runs in" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["stop", "nosuchrun"], "no run named 'nosuchrun'"),
    (["resume", "nosuchrun"], "no run named 'nosuchrun'"),
    (["stop", "done"], "has already ended: completed"),
    (["stop"], "no live run to stop; the newest"),
    (["stop", "gone"], "is lost: its worker is gone"),
    (["resume", "done"], "completed at step 10; there is nothing to resume"),
])
def test_bad_requests_exit_2_with_one_line(tmp_path, argv, message):
    fake_lost_run(tmp_path, "gone")
    fake_finished_run(tmp_path, "done", "completed", step=10)
    r = cli(*argv, "--runs-dir", str(tmp_path))
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zerotui: ") and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_stop_of_a_silent_run_whose_process_lives_names_the_process(tmp_path, capsys, monkeypatch):
    from zerotui.core.run import folder

    monkeypatch.setattr(folder, "LOST_AFTER_S", 0.3)  # silent for "30 s" without waiting them out
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.1)
        paths = new_run_dir(tmp_path, "silent")
        paths.plan.write_text("name: silent\n")
        paths.events.write_text("")
        write_status(paths, state="running", pid=proc.pid, pids=[proc.pid], heartbeat=time.time())
        time.sleep(0.5)
        assert main(["stop", "silent", "--runs-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert "gone silent" in err and f"process {proc.pid} is still running" in err and f"kill {proc.pid}" in err
        assert not paths.control.exists()  # nothing sent to a worker that does not read
    finally:
        proc.kill()
        proc.wait()


def test_stop_prints_the_acknowledgement_and_waits(tmp_path):
    paths = make_run(tmp_path, max_steps=1000)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 2), what="step 2")
    r = cli("stop", "--wait", "--runs-dir", str(paths.root.parent))  # no name: the newest live run
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{paths.name}: stop: done, stopping: a checkpoint is saved"), r.stdout
    assert any("checkpoint at step" in ln for ln in lines)
    assert lines[-2].startswith(f"{paths.name}: run stopped: stop requested by zerotui stop")
    pids = read_status(paths)["pids"]  # the supervisor (the pid `zerotui train` printed) and the worker
    assert proc.pid in pids and lines[-1] == f"{paths.name}: worker process(es) {', '.join(map(str, pids))} exited"
    out = finish(proc, paths)
    assert out["finished"]["state"] == "stopped"


def test_resume_of_a_live_run_is_refused(tmp_path):
    paths = make_run(tmp_path, max_steps=1000)
    proc = start_worker(paths, step_s=0.05)
    try:
        wait_until(lambda: bool(events(paths, "step")), what="a step")
        r = cli("resume", paths.name, "--runs-dir", str(paths.root.parent))
        assert r.returncode == 2
        assert f"run {paths.name} is still running (worker pid {proc.pid})" in r.stderr
        assert f"zerotui stop {paths.name}" in r.stderr
    finally:
        proc.terminate()
        finish(proc, paths)


def test_train_resume_takes_no_plan_options(tmp_path):
    r = cli("train", "--resume", "x", "--micro-batch", "4")
    assert r.returncode == 2 and "--resume continues a run with its own plan.yaml" in r.stderr


def test_a_folder_named_with_a_newline_or_an_escape_sequence_stays_on_its_row(tmp_path, capsys):
    """A run folder made by hand (or a tampered runs folder) can hold any character but "/": a newline split
    the table's row in two and an escape sequence reached the terminal. They are shown escaped."""
    fake_finished_run(tmp_path, "ok", "completed", step=10)
    odd = fake_finished_run(tmp_path, "x", "failed", reason="boom\x1b]0;pwned\x07")
    renamed = odd.root.with_name("two\nlines\x1b[31m")
    odd.root.rename(renamed)
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    lines = out.splitlines()
    assert len(lines) == 1 + 2 + 1  # the header, two runs, one failure reason
    assert any(line.startswith("two\\nlines\\x1b[31m ") and "failed" in line for line in lines)
    assert "  two\\nlines\\x1b[31m: boom\\x1b]0;pwned\\x07" in lines
