"""Faults during a run, with the worker around a small torch loop: kill -9 at random steps and resume
(readers drop the superseded reports), a truncated events file, a deleted dataset, a killed terminal,
a failed save that lets go of its files. docs/reliability.md lists the slower scripts in scripts/faults/.
"""
from __future__ import annotations

from places import WORKER_HELPER
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zerotui.core.events.columns import parse_events
from zerotui.core.events.stream import encode, make_event, read_all, read_new
from zerotui.core.events.reader import EventFollower, load_history
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths, new_run_dir, pid_alive, read_status, run_state, write_status
from zerotui.core.events.superseded import superseded_flags
from run_events import events, wait_until
from worker_runs import kill_run, start_worker
from worker_runs import make_run as _make_run


HELPER = WORKER_HELPER


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


def make_run(tmp_path: Path, **fields) -> RunPaths:
    return _make_run(tmp_path, **{"name": "k", "max_steps": 200, "save_interval": 10, **fields})


def test_kill9_at_random_steps_loses_and_repeats_no_step(tmp_path):
    rng = random.Random(8)
    paths = make_run(tmp_path)
    proc = start_worker(paths, step_s=0.02)
    kills = []
    for _ in range(3):
        started = wait_until(lambda: [e for e in events(paths, "run_started")][len(kills):], 60, "run_started")[0]
        target = started["start_step"] + rng.randint(3, 24)
        wait_until(lambda: any(e["step"] >= target and e["t"] > started["t"] for e in events(paths, "step")),
                   60, f"step {target}")
        kill_run(proc)
        wait_until(lambda: run_state(paths) == "lost", 10, "lost")
        # The newest complete checkpoint at the kill, read from the folder (the helper's are stepN.pt files,
        # renamed into place): its `checkpoint` event comes after, and a kill between the two leaves a
        # checkpoint that the stream has not announced yet (seen in a CI rehearsal).
        done = sorted(paths.checkpoints.glob("step*.pt"))
        kills.append(int(done[-1].stem[len("step"):]) if done else 0)
        proc = start_worker(paths, "--resume", step_s=0.02)
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

    from zerotui.core.train import checkpoint_files as ck

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
        ck.release_files(exc)
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
