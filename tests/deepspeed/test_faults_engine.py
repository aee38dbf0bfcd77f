"""Faults with the real DeepSpeed engine on the tiny model: an fp16 overflow storm and non-finite losses
end in a clean stop that resumes; a kill -9 of the whole run resumes from the last checkpoint.
"""
from __future__ import annotations

from places import FAULT_SCRIPTS
import sys
from pathlib import Path


from zerotui.core.events.stream import read_all
from zerotui.core.run.folder import RunPaths, read_status, run_state
from run_events import events, wait_until



FAULTS = FAULT_SCRIPTS


def _fault_run(tmp_path: Path, fault: str, fp16: bool = False, resume: RunPaths | None = None, **changes):
    sys.path.insert(0, str(FAULTS))
    try:
        import common
    finally:
        sys.path.remove(str(FAULTS))
    from zerotui.core.plan.presets import load_preset

    plan = load_preset("tiny-cpu-demo").with_changes(**{"log_interval": 1, "save_interval": 10,
                                                        "keep_checkpoints": 10, "eval_interval": 0,
                                                        "save_final": False, **changes})
    env = {"ZEROTUI_FAULT": fault, "ZEROTUI_FAULT_FP16": "1" if fp16 else "0"}
    paths = common.start_with_faults(tmp_path / "runs", plan, env, resume_paths=resume)
    return paths, common.wait_finished(paths, 600)


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
