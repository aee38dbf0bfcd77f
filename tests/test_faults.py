"""Faults during a run, fast enough for CI (docs/reliability.md lists the slower, repeated scripts in
scripts/faults/ and their figures).

* kill -9 of a real worker process at random steps, resumed each time: the event stream continues from
  the checkpoint, and readers drop the superseded reports of the redone steps (core/superseded.py);
* the events file truncated under a follower, ``zerotui runs`` and the dashboard's reader, also when it
  grows back past a follower's offset between two polls;
* a resume refused, with one clear line, when the data file is gone;
* the dashboard's terminal killed (tmux), the worker untouched;
* a checkpoint write that failed on a full disk lets go of its files (the space comes back);
* slow (real DeepSpeed): kill -9 and resume of the engine itself; an fp16 overflow storm and a run of
  non-finite losses ending in a clean stop that resumes from a checkpoint before the first bad step.

The worker tests run ``core/worker.py``'s real process with ``tests/worker_helpers.py``'s small real torch
loop (the engine's contract, seconds instead of DeepSpeed's start-up); the slow ones run the real engine.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from zerotui.core.event_columns import parse_events
from zerotui.core.events import encode, make_event, read_all, read_new
from zerotui.core.history_reader import EventFollower, load_history
from zerotui.core.plan import Plan
from zerotui.core.runs import RunPaths, new_run_dir, pid_alive, read_status, run_state, write_status
from zerotui.core.superseded import superseded_flags

HELPER = Path(__file__).with_name("worker_helpers.py")
FAULTS = Path(__file__).resolve().parents[1] / "scripts" / "faults"


@pytest.fixture
def tmp_path():
    """A private temporary folder (other sessions on this machine may clean pytest's shared one)."""
    with tempfile.TemporaryDirectory(prefix="zerotui-faults-") as d:
        yield Path(d)


def wait_until(cond, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def events(paths: RunPaths, type_: str | None = None) -> list[dict]:
    return [e for e in read_all(paths.events) if type_ is None or e["type"] == type_]


# -- the superseded rule, on streams written here --------------------------------------------------

def write_stream(path: Path, lives: list[tuple[int, int, list[int]]], t0: float = 1000.0) -> None:
    """Each life: (start_step, last_step, checkpoint steps); one step event per step, eval every 5."""
    with open(path, "w", encoding="utf-8") as fh:
        t = t0
        for start, last, ckpts in lives:
            fh.write(encode(make_event("run_started", t=t, plan={}, hardware=None, world_size=1, total_steps=30,
                                       start_step=start, resumed_from=f"step{start}" if start else None)))
            for s in range(start + 1, last + 1):
                t += 1
                fh.write(encode(make_event("step", t=t, step=s, epoch=0, loss=10.0 - s * 0.1 + start * 1e-3,
                                           lr=1e-3, grad_norm=1.0, loss_scale=None, skipped=0, samples_per_s=1.0,
                                           tokens_per_s=1.0, tflops=1.0, step_time=1.0)))
                if s % 5 == 0:
                    fh.write(encode(make_event("eval", t=t, step=s, loss=5.0)))
                if s in ckpts:
                    fh.write(encode(make_event("checkpoint", t=t, step=s, path=f"step{s}")))
            t += 30  # the kill, the resume's start-up


KILLED_TWICE = [(0, 17, [10]), (10, 24, [20]), (20, 30, [30])]  # killed at 17 and 24


def test_readers_drop_the_steps_a_resume_redid(tmp_path):
    path = tmp_path / "events.jsonl"
    write_stream(path, KILLED_TWICE)
    evs = read_all(path)
    flags = superseded_flags(evs)
    kept = [e["step"] for e, gone in zip(evs, flags) if e["type"] == "step" and not gone]
    assert kept == list(range(1, 31))  # every step once
    assert sum(1 for e, gone in zip(evs, flags) if gone and e["type"] == "step") == 7 + 4
    assert [e["step"] for e, gone in zip(evs, flags) if e["type"] == "eval" and not gone] == [5, 10, 15, 20, 25, 30]
    history, _ = load_history(path, parallel=False)
    assert (history.step_events, history.superseded, history.current_step, history.resumes) == (30, 11, 30, 2)
    assert history.series["loss"].count == 30
    view = history.series["loss"].view(points=200)
    assert list(view.step) == sorted(view.step)  # drawn against steps, the line never runs backwards
    # Losses are those of the resumed workers where a step was redone (start_step tags them here).
    assert history.series["eval_loss"].count == 6


def test_a_live_follower_rebuilds_when_a_resume_redoes_steps_it_has_read(tmp_path):
    path = tmp_path / "events.jsonl"
    write_stream(path, KILLED_TWICE[:1])
    history, offset = load_history(path, parallel=False)
    assert history.current_step == 17
    follower = EventFollower(path, offset)
    assert follower.poll() == ([], False)
    whole = tmp_path / "whole.jsonl"
    write_stream(whole, KILLED_TWICE)
    with open(path, "ab") as fh:  # the resumed workers append
        fh.write(whole.read_bytes()[path.stat().st_size:])
    evs, rebuild = follower.poll()
    assert rebuild and evs == [] and follower.offset == 0
    rebuilt, follower.offset = load_history(path, parallel=False)
    assert (rebuilt.step_events, rebuilt.current_step) == (30, 30)
    assert follower.poll() == ([], False)


def test_a_resume_that_redoes_nothing_is_followed_without_a_rebuild(tmp_path):
    path = tmp_path / "events.jsonl"
    write_stream(path, [(0, 20, [20])])  # stopped with a checkpoint at its last step
    _, offset = load_history(path, parallel=False)
    follower = EventFollower(path, offset)
    whole = tmp_path / "whole.jsonl"
    write_stream(whole, [(0, 20, [20]), (20, 30, [30])])
    with open(path, "ab") as fh:
        fh.write(whole.read_bytes()[path.stat().st_size:])
    evs, rebuild = follower.poll()
    assert not rebuild and [e["step"] for e in evs if e["type"] == "step"] == list(range(21, 31))


# -- kill -9 of a real worker, again and again ------------------------------------------------------

def make_run(tmp_path: Path, **fields) -> RunPaths:
    fields = {"name": "k", "max_steps": 200, "log_interval": 1, "save_interval": 10, **fields}
    paths = new_run_dir(tmp_path / "runs", fields["name"])
    paths.plan.write_text(Plan(**fields).to_yaml())
    return paths


def start_worker(paths: RunPaths, *extra: str, step_s: float = 0.02) -> subprocess.Popen:
    env = {**os.environ, "ZEROTUI_TEST_STEP_S": str(step_s), "ZEROTUI_TELEMETRY_S": "0.5", "PYTHONUNBUFFERED": "1"}
    if extra:  # what resume_run does before it starts a worker: a fresh launch time in status.json
        write_status(paths, **{**read_status(paths), "state": "starting", "launched": time.time()})
    with open(paths.log, "ab") as log:
        return subprocess.Popen([sys.executable, str(HELPER), str(paths.root), *extra], env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def test_kill9_at_random_steps_loses_and_repeats_no_step(tmp_path):
    rng = random.Random(8)
    paths = make_run(tmp_path)
    proc = start_worker(paths)
    kills = []
    for _ in range(3):
        started = wait_until(lambda: [e for e in events(paths, "run_started")][len(kills):], 60, "run_started")[0]
        target = started["start_step"] + rng.randint(3, 24)
        wait_until(lambda: any(e["step"] >= target and e["t"] > started["t"] for e in events(paths, "step")),
                   60, f"step {target}")
        proc.kill()
        proc.wait()
        wait_until(lambda: run_state(paths) == "lost", 10, "lost")
        # The newest complete checkpoint at the kill, read from the folder (the helper's are stepN.pt files,
        # renamed into place): its `checkpoint` event comes after, and a kill between the two leaves a
        # checkpoint that the stream has not announced yet (seen in a CI rehearsal).
        done = sorted(paths.checkpoints.glob("step*.pt"))
        kills.append(int(done[-1].stem[len("step"):]) if done else 0)
        proc = start_worker(paths, "--resume")
    assert proc.wait(120) == 0
    evs = read_all(paths.events)
    lives = [e for e in evs if e["type"] == "run_started"]
    assert [e["start_step"] for e in lives[1:]] == kills  # each from the newest checkpoint at its kill
    # After each resume the first step event is the checkpoint's step + log_interval, then consecutive.
    for life, nxt in zip(lives[1:], lives[2:] + [None]):
        steps = [e["step"] for e in evs if e["type"] == "step" and e["t"] > life["t"]
                 and (nxt is None or e["t"] < nxt["t"])]
        assert steps[0] == life["start_step"] + 1 and steps == list(range(steps[0], steps[-1] + 1))
    flags = superseded_flags(evs)
    kept = [e for e, gone in zip(evs, flags) if e["type"] == "step" and not gone]
    assert [e["step"] for e in kept] == list(range(1, 201))
    # A redone step repeats the same computation (weights, optimizer, RNG restored): the same loss.
    first = {e["step"]: e["loss"] for e, gone in zip(evs, flags) if e["type"] == "step" and gone}
    assert first, "no kill landed after a checkpoint's step: nothing was redone"
    redone = {e["step"]: e["loss"] for e in kept}
    assert all(first[s] == pytest.approx(redone[s], rel=1e-6) for s in first)
    history, _ = load_history(paths.events, parallel=False)
    assert (history.step_events, history.superseded, history.current_step) == (200, len(first), 200)
    assert events(paths, "run_finished")[-1]["state"] == "completed"


# -- the events file truncated by an outside tool -------------------------------------------------

def test_readers_recover_from_a_truncated_events_file(tmp_path, zerotui_cli):
    paths = make_run(tmp_path / "home", max_steps=400)
    paths = RunPaths(paths.root)
    proc = start_worker(paths, step_s=0.02)
    wait_until(lambda: len(events(paths, "step")) >= 20, 60, "step 20")
    history, offset = load_history(paths.events, parallel=False)
    follower = EventFollower(paths.events, offset)
    raw_offset = paths.events.stat().st_size
    for size in (0, 37, None):  # emptied, mid-line, the start of the file's last whole line
        data = paths.events.read_bytes()
        if size is None:
            size = data[:-1].rfind(b"\n") + 1
        subprocess.run(["truncate", "-s", str(size), str(paths.events)], check=True)
        # The raw reader restarts from 0 when the file shrank below its offset; the follower asks for a
        # rebuild; neither raises on the torn line the worker's next append leaves behind.
        evs, raw_offset = read_new(paths.events, raw_offset)
        got, rebuild = follower.poll()
        if rebuild:
            history, follower.offset = load_history(paths.events, parallel=False)
        wait_until(lambda: any(e["type"] == "step" for e in read_new(paths.events, 0)[0]), 10, "new steps")
        time.sleep(0.3)
        got, rebuild = follower.poll()
        if rebuild:
            history, follower.offset = load_history(paths.events, parallel=False)
        else:
            history.ingest(parse_events(got))
        newest = max(e["step"] for e in events(paths, "step"))
        assert history.current_step is not None and newest - history.current_step <= 30
        listed = zerotui_cli("runs", "--json", "--runs-dir", str(paths.root.parent))
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout)[0]["state"] == "running"
    assert proc.wait(120) == 0
    assert events(paths, "run_finished")[-1]["state"] == "completed"  # the worker's appends went on
    final, _ = load_history(paths.events, parallel=False)
    assert final.current_step == 400 and final.finished is not None


# -- the data file gone before a resume ------------------------------------------------------------

def test_resume_is_refused_in_one_line_when_the_data_file_is_gone(tmp_path, zerotui_cli):
    data = tmp_path / "my data.jsonl"
    data.write_text('{"instruction": "a", "output": "b"}\n', encoding="utf-8")
    runs = tmp_path / "runs"
    paths = new_run_dir(runs, "gone")
    paths.plan.write_text(Plan(name="gone", data=str(data)).to_yaml())
    write_status(paths, state="stopped", step=20, reason="stop requested")
    data.unlink()
    def files():  # .launch.lock, resume's empty lock file, is the one file it may leave
        return {p.name: p.read_bytes() for p in paths.root.iterdir() if p.is_file() and p.name != ".launch.lock"}

    before = files()
    out = zerotui_cli("resume", paths.name, "--runs-dir", str(runs))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert str(data) in out.stderr and "does not exist" in out.stderr and "Traceback" not in out.stderr
    assert "put the file back" in out.stderr and "plan.yaml" in out.stderr  # resume takes no --data
    assert files() == before  # nothing written or changed


# -- the dashboard's terminal goes away ------------------------------------------------------------

@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_killing_the_dashboards_terminal_ends_the_dashboard_not_the_run(tmp_path):
    paths = make_run(tmp_path, max_steps=3000, save_interval=0)
    proc = start_worker(paths, step_s=0.02)
    wait_until(lambda: events(paths, "step"), 60, "a step")
    session = f"zt-faults-{os.getpid()}"
    zerotui = Path(sys.executable).with_name("zerotui")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40",
                    f"{zerotui} attach {paths.root}"], check=True)
    try:
        wait_until(lambda: "step" in subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                                    capture_output=True, text=True).stdout, 60, "the dashboard")
        pane = int(subprocess.run(["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"],
                                  capture_output=True, text=True).stdout.split()[0])
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    wait_until(lambda: not pid_alive(pane), 15, "the dashboard to end with its terminal")
    seen = max(e["step"] for e in events(paths, "step"))
    wait_until(lambda: max(e["step"] for e in events(paths, "step")) > seen, 30, "training to go on")
    assert proc.poll() is None and read_status(paths)["pid"] == proc.pid
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0 and events(paths, "run_finished")[-1]["state"] == "stopped"


# -- the real engine (slow) ------------------------------------------------------------------------

def _fault_run(tmp_path: Path, fault: str, fp16: bool = False, resume: RunPaths | None = None, **changes):
    sys.path.insert(0, str(FAULTS))
    try:
        import common
    finally:
        sys.path.remove(str(FAULTS))
    from zerotui.core.presets import load_preset

    plan = load_preset("tiny-cpu-demo").with_changes(**{"log_interval": 1, "save_interval": 10,
                                                        "keep_checkpoints": 10, "eval_interval": 0,
                                                        "save_final": False, **changes})
    env = {"ZEROTUI_FAULT": fault, "ZEROTUI_FAULT_FP16": "1" if fp16 else "0"}
    paths = common.start_with_faults(tmp_path / "runs", plan, env, resume_paths=resume)
    return paths, common.wait_finished(paths, 600)


@pytest.mark.slow
def test_fp16_overflow_storm_ends_in_a_clean_stop_that_resumes(tmp_path):
    """fp16 on this CPU (DeepSpeed's capability answer overridden) with every gradient overflowing from
    step 14: DeepSpeed skips each update and halves its real loss scale until its floor, where it would
    raise; zerotui stops cleanly instead, and a resume continues from the newest checkpoint."""
    paths, fin = _fault_run(tmp_path, "overflow:14-", fp16=True, precision="fp16", max_steps=60)
    assert fin["state"] == "stopped", fin
    assert "reached its floor (1)" in fin["reason"] and "(from step 14)" in fin["reason"]
    assert "checkpoint step30 holds the weights from before step 14" in fin["reason"]
    steps = {e["step"]: e for e in events(paths, "step")}
    scales = [steps[s]["loss_scale"] for s in sorted(steps) if s >= 14]
    assert scales[0] == 65536 and all(b == a / 2 for a, b in zip(scales, scales[1:])) and scales[-1] == 1
    assert all(steps[s]["skipped"] == 1 for s in steps if s >= 14) and steps[13]["skipped"] == 0
    kinds = [a["kind"] for a in events(paths, "alert")]
    assert kinds == ["loss_scale_collapse", "loss_scale_collapse"]  # near the floor, then at the stop
    assert read_status(paths)["state"] == "stopped"
    before = len(read_all(paths.events))
    _, fin2 = _fault_run(tmp_path, "", fp16=True, resume=paths)
    resumed = read_all(paths.events)[before:]
    assert next(e for e in resumed if e["type"] == "run_started")["resumed_from"] == "step30"
    assert fin2["state"] == "completed"
    assert all(isinstance(e["loss"], float) for e in resumed if e["type"] == "step")


@pytest.mark.slow
def test_nonfinite_losses_end_in_a_clean_stop_before_the_first_bad_step(tmp_path):
    """Stage 0 in fp32 applies a NaN update (the weights are spoiled for good); past max_nonfinite the
    run stops cleanly, never having saved after the NaN, and resumes from the step-10 checkpoint."""
    paths, fin = _fault_run(tmp_path, "nan_loss:17-17", precision="fp32", stage=0, max_steps=40, max_nonfinite=3)
    assert fin["state"] == "stopped" and fin["step"] == 19
    assert "from step 17" in fin["reason"] and "checkpoint step10 (before the first bad step)" in fin["reason"]
    assert [e["step"] for e in events(paths, "checkpoint")] == [10]
    assert [e["step"] for e in events(paths, "step") if e["loss"] == "nan"] == [17, 18, 19]
    assert len([a for a in events(paths, "alert") if a["kind"] == "nonfinite_loss"]) == 3
    before = len(read_all(paths.events))
    _, fin2 = _fault_run(tmp_path, "", resume=paths)
    resumed = read_all(paths.events)[before:]
    assert next(e for e in resumed if e["type"] == "run_started")["resumed_from"] == "step10"
    assert fin2["state"] == "completed" and all(isinstance(e["loss"], float) for e in resumed if e["type"] == "step")


@pytest.mark.slow
def test_kill9_of_the_real_engine_resumes_from_the_last_checkpoint(tmp_path):
    paths, _ = None, None
    sys.path.insert(0, str(FAULTS))
    try:
        import common
    finally:
        sys.path.remove(str(FAULTS))
    paths = common.train(tmp_path / "runs", "--max-steps", "40", "--log-interval", "1", "--save-interval", "10",
                         "--eval-interval", "0", "--no-save-final")
    pid = common.worker_pid(paths)
    wait_until(lambda: any(e["step"] >= 15 for e in events(paths, "step")), 300, "step 15")
    common.kill9(pid)
    wait_until(lambda: run_state(paths) == "lost", 40, "lost")
    assert common.resume(paths).returncode == 0
    assert common.wait_finished(paths, 600)["state"] == "completed"
    check = common.check_stream(paths, 1)
    assert check["ok"], check["problems"]
    assert check["superseded_step_events"] >= 5 and check["max_rel_loss_diff_redone"] <= common.LOSS_RTOL


# -- a failed checkpoint write lets go of its files ------------------------------------------------

def _open_paths(folder: Path) -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)):
            out.append(target)
    return out


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc")
def test_a_failed_save_closes_its_files_so_the_space_comes_back(tmp_path):
    """torch.save's zip writer that failed on a full disk stays open through the exception's frames; the
    torn files were removed but kept their space, and the worker's next write (status.json) failed."""
    import torch

    from zerotui.core import checkpoint as ck

    class Full:  # what a full disk does to the zip writer: the write fails part-way
        def __init__(self, path):
            self.fh = open(path, "wb")

        def write(self, data):
            self.fh.write(data[:10])
            raise OSError(28, "No space left on device")

        def flush(self):
            pass

    target = tmp_path / "model_states.pt"

    def deepspeed_like_save():
        writer = Full(target)  # noqa: F841 - held by this frame, as torch's writer is
        torch.save({"w": torch.zeros(1000)}, writer)

    try:
        deepspeed_like_save()
    except Exception as exc:  # noqa: BLE001
        assert ck.is_disk_full(exc)
        target.unlink()
        assert _open_paths(tmp_path), "the writer should still be open here"
        ck._release_files(exc)
        assert _open_paths(tmp_path) == []


def test_a_follower_notices_a_cut_that_grew_back_past_its_offset(tmp_path):
    """Truncated, then appended to beyond the follower's offset before its next poll: the size check alone
    sees nothing; the byte before the offset no longer ends a line."""
    path = tmp_path / "events.jsonl"
    write_stream(path, [(0, 20, [10])])
    _, offset = load_history(path, parallel=False)
    follower = EventFollower(path, offset)
    data = path.read_bytes()
    path.write_bytes(data[: offset // 2 + 7])  # cut mid-line...
    with open(path, "ab") as fh:  # ...and the worker appends more than was cut
        fh.write(data[offset // 2:] + data[:200])
    assert path.stat().st_size > offset
    assert follower.poll() == ([], True)
    rebuilt, follower.offset = load_history(path, parallel=False)
    assert rebuilt.current_step is not None and follower.poll() == ([], False)
