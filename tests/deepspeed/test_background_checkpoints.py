"""Checkpoints written in the background (core/train/background_save.py) with the real engine on the CPU:
training goes on while the files are written, the marker comes only after them, and a kill, a failed
write or a graceful stop during the write keep the guarantees of a checkpoint written in the foreground;
a host without free RAM for the copy writes each checkpoint at once.

A slow disk is made by the fault worker (scripts/faults/fault_worker.py, ``ZEROTUI_FAULT_WRITE``), which
delays or fails only the writer thread's files: the product code is unchanged.
"""
from __future__ import annotations

import sys
from pathlib import Path

from places import FAULT_SCRIPTS
from run_events import events, wait_until

from zerotui.core.train.checkpoint import MARKER, list_checkpoints
from zerotui.core.run.folder import RunPaths, run_state, send_control


def _common():
    sys.path.insert(0, str(FAULT_SCRIPTS))
    try:
        import common
    finally:
        sys.path.remove(str(FAULT_SCRIPTS))
    return common


def _start(tmp_path: Path, write_fault: str, resume: RunPaths | None = None, **changes) -> RunPaths:
    from zerotui.core.plan.presets import load_preset

    plan = load_preset("tiny-cpu-demo").with_changes(**{
        "log_interval": 1, "save_interval": 10, "keep_checkpoints": 10, "eval_interval": 0,
        "save_final": False, "max_steps": 30, **changes})
    return _common().start_with_faults(tmp_path / "runs", plan, {"ZEROTUI_FAULT_WRITE": write_fault},
                                       resume_paths=resume)


def _index(evs: list[dict], pred) -> int:
    return next(i for i, e in enumerate(evs) if pred(e))


def test_training_goes_on_while_a_checkpoint_is_written_and_the_marker_follows_the_files(tmp_path):
    # A checkpoint's files wait until training has taken three more steps, then 4 s each (three files:
    # 12 s against a step's 30-100 ms here). Step 12 is logged before step 13 is taken, so the order
    # below holds on a CI box however loaded.
    paths = _start(tmp_path, "slow:4@3")
    fin = _common().wait_finished(paths, 600)
    assert fin["state"] == "completed"
    evs = [e for e in events(paths) if e["type"] in ("step", "checkpoint")]
    at10 = _index(evs, lambda e: e["type"] == "checkpoint" and e["step"] == 10)
    ck = evs[at10]
    told = [(e["type"], e["step"], round(e["t"], 2)) for e in evs[max(0, at10 - 3):at10 + 2]]
    assert ck["background"] is True, f"the step-10 checkpoint was written in the foreground: {ck}"
    # training waited for the copy only; the files (two or more, each delayed 4 s) took longer
    assert ck["write_seconds"] >= 8 and ck["seconds"] < ck["write_seconds"] / 2, ck
    # steps after 10 were trained before the step-10 checkpoint was announced (a loop that waited for the
    # write would have written it first: the fault worker waits at most 120 s for those steps)
    assert {11, 12} <= {e["step"] for e in evs[:at10] if e["type"] == "step"}, told
    # the final save (the run's end) is written in the foreground and every checkpoint is complete
    done = {c.step: c.complete for c in list_checkpoints(paths.checkpoints)}
    assert done == {10: True, 20: True, 30: True}
    assert not list(paths.checkpoints.glob("step*/zerotui_rank*"))  # one rank: no hand-over files


def test_a_host_without_room_for_the_copy_writes_each_checkpoint_at_once(tmp_path):
    paths = _start(tmp_path, "noroom", max_steps=20)
    assert _common().wait_finished(paths, 600)["state"] == "completed"
    cks = events(paths, "checkpoint")
    assert [c["step"] for c in cks] == [10, 20]
    assert cks[0]["background"] is False  # the snapshot would not have fit: no background copy was made
    # written before training went on: announced before step 11 was trained
    evs = [(e["type"], e["step"]) for e in events(paths) if e["type"] in ("step", "checkpoint")]
    assert evs.index(("checkpoint", 10)) < evs.index(("step", 11))
    assert {c.step: c.complete for c in list_checkpoints(paths.checkpoints)} == {10: True, 20: True}


def test_kill9_during_a_background_write_leaves_a_torn_checkpoint_that_resume_skips(tmp_path):
    common = _common()
    paths = _start(tmp_path, "slow:30")
    wait_until(lambda: any(e["step"] >= 12 for e in events(paths, "step")), 300, "step 12")
    assert not (paths.checkpoints / "step10" / MARKER).exists()  # still being written
    common.kill9(common.worker_pid(paths))
    wait_until(lambda: run_state(paths) == "lost", 40, "lost")
    assert (paths.checkpoints / "step10").is_dir() and not (paths.checkpoints / "step10" / MARKER).exists()
    paths = _start(tmp_path, "slow:0", resume=paths)  # resume reads the run folder's plan
    assert common.wait_finished(paths, 600)["state"] == "completed"
    started = events(paths, "run_started")
    assert started[-1]["resumed_from"] is None and started[-1]["start_step"] == 0
    assert {c.step: c.complete for c in list_checkpoints(paths.checkpoints)} == {10: True, 20: True, 30: True}


def test_a_background_write_that_fails_alerts_and_never_marks_the_checkpoint(tmp_path):
    paths = _start(tmp_path, "enospc")
    fin = _common().wait_finished(paths, 600)
    assert fin["state"] == "failed"
    alerts = [a for a in events(paths, "alert") if a["kind"] == "disk"]
    assert alerts and "checkpoint at step 10 could not be written" in alerts[0]["message"]
    assert "the disk is full" in alerts[0]["message"] and "zerotui resume" in alerts[0]["hint"]
    assert not events(paths, "checkpoint")
    assert not (paths.checkpoints / "step10").exists()  # the torn files were removed


def test_a_graceful_stop_waits_for_the_write_in_flight(tmp_path):
    paths = _start(tmp_path, "slow:3", max_steps=400)
    wait_until(lambda: any(e["step"] >= 11 for e in events(paths, "step")), 300, "step 11")
    send_control(paths, "stop", by="test")
    fin = _common().wait_finished(paths, 600)
    assert fin["state"] == "stopped"
    saved = {c.step: c.complete for c in list_checkpoints(paths.checkpoints)}
    assert saved[10] is True and all(saved.values()) and max(saved) == fin["step"]
    steps = [e["step"] for e in events(paths, "checkpoint")]
    assert steps[0] == 10 and steps[-1] == fin["step"]
