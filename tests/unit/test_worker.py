"""The worker process and its supervisor: signals, control.jsonl, heartbeat, alerts and the one
run_finished.

Each test runs a real worker process (``tests/helpers/worker_helpers.py``: ``run.worker.main`` with a
small real torch training loop) under the real supervisor, detached like ``zerotui train`` starts them,
and reads only the run folder, like every client does. The DeepSpeed engine itself is covered in
tests/deepspeed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import read_status, run_state, send_control
from zerotui.core.run.monitor import RamWatch, RunTracker, StallWatch, describe_failure, oom_kind
from run_events import events, wait_until
from worker_runs import finish, kill_run, make_run, start_worker, step_reached, worker_pid


# -- whole runs -------------------------------------------------------------------------------------

def test_run_completes_with_heartbeat_and_one_run_finished(tmp_path):
    paths = make_run(tmp_path, max_steps=30)
    proc = start_worker(paths, step_s=0.1)
    wait_until(step_reached(paths, 5), what="step 5")
    # The heartbeat (every ~2 s) catches up with the event stream.
    wait_until(lambda: (read_status(paths).get("step") or 0) >= 5, 5, "a heartbeat at step 5")
    st = read_status(paths)
    assert st["pid"] == proc.pid and st["state"] == "running"
    assert st["total_steps"] == 30 and st["loss"] is not None and st["started"] <= time.time()
    assert run_state(paths) == "running"
    beat = st["heartbeat"]
    wait_until(lambda: read_status(paths).get("heartbeat", 0) > beat, 10, "a newer heartbeat")
    out = finish(proc, paths)
    assert out["rc"] == 0 and out["finished"]["state"] == "completed"
    assert [e["step"] for e in events(paths, "step")] == list(range(1, 31))
    assert out["status"]["step"] == 30 and run_state(paths) == "completed"
    tel = events(paths, "telemetry")  # every 0.5 s here (ZEROTUI_TELEMETRY_S)
    assert tel and tel[0]["ram_total"] > 0 and tel[0]["rss"] > 0 and tel[0]["gpus"] == []


def test_stop_via_control_checkpoints_then_stops(tmp_path):
    paths = make_run(tmp_path, max_steps=1000)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 3), what="step 3")
    sent = send_control(paths, "stop", by="test")
    out = finish(proc, paths)
    acks = events(paths, "control_ack")
    assert [(a["command"], a["id"], a["ok"]) for a in acks] == [("stop", sent["id"], True)]
    ckpts = events(paths, "checkpoint")
    assert len(ckpts) == 1 and Path(ckpts[0]["path"]).is_file()
    assert out["rc"] == 0 and out["finished"]["state"] == "stopped"
    assert "stop requested by test" in out["finished"]["reason"]
    assert out["finished"]["step"] == ckpts[0]["step"] < 1000


def test_sigterm_stops_gracefully_with_checkpoint(tmp_path):
    paths = make_run(tmp_path, max_steps=1000)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 3), what="step 3")
    proc.send_signal(signal.SIGTERM)
    out = finish(proc, paths)
    assert out["rc"] == 0 and out["finished"]["state"] == "stopped"
    assert "SIGTERM" in out["finished"]["reason"]
    assert len(events(paths, "checkpoint")) == 1


def test_second_signal_stops_without_checkpoint(tmp_path):
    paths = make_run(tmp_path, max_steps=1000)
    proc = start_worker(paths, step_s=1.0)  # both signals land within one step
    wait_until(step_reached(paths, 1), what="step 1")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out = finish(proc, paths)
    assert out["finished"]["state"] == "stopped" and "twice" in out["finished"]["reason"]
    assert events(paths, "checkpoint") == []


def test_third_signal_ends_a_stuck_loop_at_once(tmp_path):
    paths = make_run(tmp_path, max_steps=5)
    proc = start_worker(paths, step_s=60.0)  # a step that no flag can interrupt, like a hung collective
    wait_until(lambda: read_status(paths).get("state") == "running", 30, "running")
    t = time.monotonic()
    for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGINT):
        proc.send_signal(sig)
        time.sleep(0.3)
    out = finish(proc, paths, timeout=10)
    assert time.monotonic() - t < 10
    assert out["rc"] == 0 and out["finished"]["state"] == "stopped"
    assert "third signal (SIGTERM, SIGTERM, SIGINT)" in out["finished"]["reason"]


def test_sighup_does_not_stop_training(tmp_path):
    paths = make_run(tmp_path, max_steps=15)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 2), what="step 2")
    proc.send_signal(signal.SIGHUP)
    out = finish(proc, paths)
    assert out["finished"]["state"] == "completed" and out["status"]["step"] == 15


def test_pause_resume_and_checkpoint_commands_are_acknowledged(tmp_path):
    paths = make_run(tmp_path, max_steps=60)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 3), what="step 3")
    pause = send_control(paths, "pause")
    wait_until(lambda: read_status(paths).get("state") == "paused", 10, "paused status")
    time.sleep(0.3)  # the step in flight when the pause arrived may still finish
    held = len(events(paths, "step"))
    time.sleep(1.0)
    assert len(events(paths, "step")) == held, "steps went on while paused"
    again = send_control(paths, "pause")
    resume = send_control(paths, "resume")
    ckpt = send_control(paths, "checkpoint")
    out = finish(proc, paths)
    acks = {a["id"]: a for a in events(paths, "control_ack")}
    assert acks[pause["id"]]["ok"] and acks[resume["id"]]["ok"] and acks[ckpt["id"]]["ok"]
    assert acks[again["id"]]["message"] == "already paused"
    assert len(events(paths, "checkpoint")) == 1
    assert out["finished"]["state"] == "completed"


def test_loop_exception_fails_with_type_message_and_phase(tmp_path):
    paths = make_run(tmp_path)
    proc = start_worker(paths, ZEROTUI_TEST_FAIL="error", ZEROTUI_TEST_FAIL_STEP="4")
    out = finish(proc, paths)
    assert out["rc"] == 1 and out["finished"]["state"] == "failed"
    reason = out["finished"]["reason"]
    assert reason.startswith("ValueError in training step 4: a bad value in the loop"), reason
    assert "Traceback" not in reason
    assert "Traceback (most recent call last)" in paths.log.read_text()


@pytest.mark.parametrize("kind, what", [("oom", "GPU memory"), ("host_oom", "host RAM")])
def test_out_of_memory_names_what_ran_out(tmp_path, kind, what):
    from zerotui.core.atomic import atomic_write_json
    from zerotui.core.hardware.detect import stated_hardware

    paths = make_run(tmp_path, stage=0, micro_batch=64, seq_len=1024)
    atomic_write_json(paths.hardware, stated_hardware(gpu_mem="8GiB", gpus=1, ram="64GiB").to_dict())
    proc = start_worker(paths, ZEROTUI_TEST_FAIL=kind, ZEROTUI_TEST_FAIL_STEP="2")
    out = finish(proc, paths)
    reason = out["finished"]["reason"]
    assert out["finished"]["state"] == "failed" and f"ran out of {what} in training step 2" in reason, reason
    assert "the estimate for this plan is" in reason
    if kind == "oom":  # the estimator's leaner plan, as options to type
        assert "this would fit: --" in reason, reason
    alerts = events(paths, "alert")
    assert [a["kind"] for a in alerts] == ["oom"]


def test_bad_plan_file_fails_cleanly(tmp_path):
    paths = make_run(tmp_path)
    paths.plan.write_text("stage: 7\n")
    proc = start_worker(paths)
    out = finish(proc, paths, timeout=30)
    assert out["rc"] == 1 and "stage" in out["finished"]["reason"]
    assert "reading the run folder" in out["finished"]["reason"]


def test_kill9_then_resume_continues_from_the_checkpoint(tmp_path):
    paths = make_run(tmp_path, max_steps=40, save_interval=5)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 12), what="step 12")
    kill_run(proc)  # the worker and its supervisor at once: nobody is left to write the end
    wait_until(lambda: run_state(paths) == "lost", 10, "lost state")
    ckpt_step = events(paths, "checkpoint")[-1]["step"]
    assert ckpt_step >= 10
    # A stop queued for the dead worker must not end the resumed one.
    send_control(paths, "stop")
    before = len(events(paths))
    status = read_status(paths)
    from zerotui.core.run.folder import write_status

    write_status(paths, **{**status, "state": "starting", "launched": time.time()})
    proc2 = start_worker(paths, "--resume", step_s=0.0)
    out = finish(proc2, paths)
    assert out["finished"]["state"] == "completed"
    resumed = events(paths)[before:]
    started = [e for e in resumed if e["type"] == "run_started"]
    assert started and started[0]["resumed_from"] == ckpt_step
    assert [e["step"] for e in resumed if e["type"] == "step"] == list(range(ckpt_step + 1, 41))
    assert not [e for e in resumed if e["type"] == "control_ack"]


def test_a_worker_killed_by_sigkill_ends_the_run_as_failed_naming_the_signal(tmp_path):
    """The kernel's OOM killer sends SIGKILL: the worker cannot say a word, its supervisor says it."""
    paths = make_run(tmp_path, max_steps=60, save_interval=5)
    proc = start_worker(paths, step_s=0.05)
    wait_until(step_reached(paths, 7), what="step 7")
    os.kill(worker_pid(paths), signal.SIGKILL)
    out = finish(proc, paths)
    assert out["rc"] == 1 and out["finished"]["state"] == "failed" and run_state(paths) == "failed"
    reason = out["finished"]["reason"]
    assert "died without reporting why: killed by SIGKILL" in reason and "OOM killer" in reason, reason
    assert out["finished"]["step"] >= 7 and out["status"]["reason"] == reason
    # A failed run resumes from its last complete checkpoint like a lost one.
    ckpt = events(paths, "checkpoint")[-1]["step"]
    before = len(events(paths))
    assert start_worker(paths, "--resume").wait(120) == 0
    resumed = events(paths)[before:]
    assert [e["resumed_from"] for e in resumed if e["type"] == "run_started"] == [ckpt]
    assert [e["state"] for e in resumed if e["type"] == "run_finished"] == ["completed"]


def test_a_worker_without_its_supervisor_refuses_to_start(tmp_path):
    paths = make_run(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "ZEROTUI_SUPERVISOR_PID"}
    r = subprocess.run([sys.executable, "-m", "zerotui.core.run.worker", str(paths.root)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no supervisor" in r.stderr and "zerotui train" in r.stderr
    assert not paths.events.exists() and len(r.stderr.strip().splitlines()) == 1


def test_a_worker_whose_supervisor_was_killed_records_the_end_itself(tmp_path):
    # kill -9 of the supervisor alone: the worker trains on to its last step. The run must read as
    # completed, with one run_finished and a final status, not as "lost" with a resume offered.
    from zerotui.core.run.orphan_end import ORPHAN_NOTE
    from zerotui.core.run.folder import pid_alive

    paths = make_run(tmp_path, max_steps=12)
    proc = start_worker(paths, step_s=0.3)
    worker = worker_pid(paths)
    wait_until(step_reached(paths, 2), what="step 2", paths=paths)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not pid_alive(worker), timeout=90, what="the worker's end", paths=paths)
    finished = events(paths, "run_finished")
    assert len(finished) == 1 and events(paths)[-1]["type"] == "run_finished"
    assert finished[0]["state"] == "completed" and finished[0]["step"] == 12 and ORPHAN_NOTE in finished[0]["reason"]
    st = read_status(paths)
    assert st["state"] == "completed" and st["phase"] == "finished" and st["step"] == 12
    assert run_state(paths) == "completed"


def test_stall_alert_names_phase_and_step(tmp_path):
    paths = make_run(tmp_path, max_steps=2, stall_minutes=0.02)  # 1.2 s without progress
    proc = start_worker(paths, step_s=3.0)
    out = finish(proc, paths)
    stalls = [a for a in events(paths, "alert") if a["kind"] == "stall"]
    # Under load torch's import alone can outlast 1.2 s ("phase starting"); the step's stall must be there.
    in_step = [a for a in stalls if "the loop was in training step " in a["message"]]
    assert in_step, stalls
    assert "worker_helpers.py" in in_step[0]["message"] and "in small_train" in in_step[0]["message"]
    assert in_step[0]["step"] in (0, 1) and in_step[0]["phase"] == "training"
    assert out["finished"]["state"] == "completed"


# -- the monitor's pieces, without a process ---------------------------------------------------------

def test_stall_watch_alerts_once_per_episode_and_not_while_paused():
    tr = RunTracker(now=0.0)
    w = StallWatch(minutes=1)
    assert w.check(tr, paused=False, now=59.0) is None
    first = w.check(tr, paused=False, now=61.0)
    assert first and first["kind"] == "stall" and "phase starting" in first["message"]
    assert w.check(tr, paused=False, now=200.0) is None  # same episode
    tr.observe("step", {"step": 7})
    assert w.check(tr, paused=False, now=time.monotonic() + 61) is not None  # progress re-armed it
    tr2 = RunTracker(now=0.0)
    w2 = StallWatch(minutes=1)
    assert w2.check(tr2, paused=True, now=500.0) is None
    assert w2.check(tr2, paused=False, now=530.0) is None  # the pause reset the clock


def test_a_failure_in_the_first_step_is_located_in_words():
    """An out-of-memory in the loop's first step read "in phase first step after step 0" until 2026-12-06."""
    tr = RunTracker(now=0.0)
    tr.observe("run_started", {"total_steps": 10, "start_step": 0})
    tr.observe("phase", {"name": "first step"})
    assert tr.where() == "the first training step (step 1)"
    resumed = RunTracker(now=0.0)
    resumed.observe("run_started", {"total_steps": 100, "resumed_from": 50})
    resumed.observe("phase", {"name": "first step"})
    assert resumed.where() == "the first training step (step 51)"
    resumed.observe("step", {"step": 51})
    assert resumed.where() == "training step 52"


def test_ram_watch_alerts_above_90_and_rearms_below_85():
    w = RamWatch(offload="cpu")
    gib = 1024 ** 3
    assert w.check(80 * gib, 100 * gib) is None
    a = w.check(93 * gib, 100 * gib, rss=40 * gib)
    assert a and a["kind"] == "host_ram" and "93%" in a["message"] and "NVMe" in a["hint"]
    assert w.check(95 * gib, 100 * gib) is None
    assert w.check(88 * gib, 100 * gib) is None  # not recovered enough
    assert w.check(91 * gib, 100 * gib) is None
    assert w.check(70 * gib, 100 * gib) is None
    assert w.check(92 * gib, 100 * gib) is not None


def test_oom_advice_is_a_plan_that_needs_less_gpu_memory():
    import torch
    from zerotui.core.hardware.detect import stated_hardware

    plan = Plan(model="tiny", precision="bf16", stage=0, micro_batch=64, seq_len=1024)
    hw = stated_hardware(gpu_mem="8GiB", gpus=1, ram="64GiB")
    f = describe_failure(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "training step 3",
                         plan, hw)
    assert f.kind == "oom_gpu"
    assert f.reason.startswith("ran out of GPU memory in training step 3: CUDA out of memory. Tried to allocate")
    import re

    assert re.search(r"the estimate for this plan is \d+\.\d GiB per GPU of 8\.0 GiB", f.reason), f.reason
    assert "this would fit: --" in f.reason  # options to type; which ones is the recommender's call
    big = Plan(model="llama-2-7b", precision="bf16", stage=2, micro_batch=4, seq_len=2048)
    f = describe_failure(MemoryError(), "phase loading model", big, stated_hardware(gpu_mem="24GiB", gpus=1, ram="64GiB"))
    assert f.reason.startswith("ran out of host RAM in phase loading model; the estimate for this plan is")
    assert "even the leanest plan" in f.reason


def test_describe_failure_kinds():
    import torch

    assert oom_kind(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB")) == "gpu"
    assert oom_kind(MemoryError()) == "host"
    assert oom_kind(ValueError("x")) is None
    from zerotui.core.errors import DataError

    f = describe_failure(DataError("data.jsonl: no usable rows", "check the format"), "phase tokenising")
    assert f.kind == "error" and f.reason == "data.jsonl: no usable rows (check the format) (in phase tokenising)"


def test_control_inbox_skips_acknowledged_and_earlier_commands(tmp_path):
    from zerotui.core.train.control import ControlState
    from zerotui.core.events.stream import EventWriter
    from zerotui.core.run.inbox import ControlInbox

    paths = make_run(tmp_path)
    old_stop = send_control(paths, "stop")
    with EventWriter(paths.events) as w:  # the previous worker answered it
        w.emit("control_ack", command="stop", id=old_stop["id"], ok=True)
    unanswered = send_control(paths, "stop-now")  # sent to a worker that died before reading it
    launched = time.time()
    control = ControlState()
    inbox = ControlInbox(paths, control, RunTracker(), launched)
    inbox.skip_acknowledged()
    assert inbox.poll() == [] and not control.stopping and unanswered["t"] < launched
    ckpt = send_control(paths, "checkpoint")
    pause = send_control(paths, "pause")
    acks = inbox.poll()
    assert [(a["command"], a["id"], a["ok"]) for a in acks] == [("checkpoint", ckpt["id"], True),
                                                                  ("pause", pause["id"], True)]
    assert control.checkpoint.is_set() and control.paused
    assert inbox.poll() == []  # each command is answered once
    send_control(paths, "stop")
    send_control(paths, "pause")
    acks = inbox.poll()
    assert control.stop.is_set() and not control.paused  # a stop wakes a paused loop
    assert acks[1]["ok"] is False and "stopping" in acks[1]["message"]


def test_a_resumed_run_reports_the_checkpoint_it_resumed_from():
    # `runs --json` showed checkpoint_step null for a resumed run until it saved again, with step491 there
    resumed, fresh = RunTracker(), RunTracker()
    resumed.observe("run_started", {"total_steps": 600, "start_step": 491, "resumed_from": "step491"})
    fresh.observe("run_started", {"total_steps": 600, "start_step": 0, "resumed_from": None})
    assert resumed.last_checkpoint_step == 491 and fresh.last_checkpoint_step is None
    resumed.observe("checkpoint", {"step": 500, "path": "x"})
    assert resumed.last_checkpoint_step == 500
