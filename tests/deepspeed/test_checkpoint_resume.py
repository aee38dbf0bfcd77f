"""Checkpoints of real runs: resume continues the same steps on the same data with the same results, a
torn checkpoint is skipped, and a full disk fails clearly with the previous checkpoint intact.
"""
from __future__ import annotations

import shutil

import pytest

from engine_runs import assert_valid_stream, events, losses, make_run, run_engine
from zerotui.core.train import checkpoint as ck


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def reference(tmp_path_factory, cache):
    """An uninterrupted run: checkpoints at 5, 10, 15 and 20, a step event every step."""
    paths = make_run(tmp_path_factory.mktemp("ref") / "run", save_interval=5, keep_checkpoints=4, log_interval=1)
    result = run_engine(paths, cache=cache)
    assert result["state"] == "completed", result
    return paths


def test_graceful_stop_then_resume_continues_the_same_steps_and_results(tmp_path, cache, reference):
    paths = make_run(tmp_path / "run", save_interval=5, keep_checkpoints=4, log_interval=1)
    stopped = run_engine(paths, "--stop-after", "7", cache=cache)
    assert (stopped["state"], stopped["step"]) == ("stopped", 7) and "test asked to stop" in stopped["reason"]
    assert [(e["step"], e["why"]) for e in events(paths, "checkpoint")] == [(5, "interval"), (7, "stop")]

    resumed = run_engine(paths, "--resume", cache=cache)
    assert (resumed["state"], resumed["step"]) == ("completed", 20)
    assert_valid_stream(paths)
    starts = events(paths, "run_started")
    assert [(e["start_step"], e["resumed_from"]) for e in starts] == [(0, None), (7, "step7")]
    steps = [e["step"] for e in events(paths, "step")]
    assert steps == list(range(1, 21))  # the same numbering, continued
    # Same data order, optimizer state, schedule and RNG: every step after the resume matches the
    # uninterrupted run (CPU kernels are deterministic for identical inputs).
    ref, got = losses(reference), losses(paths)
    assert [got[s] for s in range(8, 21)] == pytest.approx([ref[s] for s in range(8, 21)], rel=1e-5)
    lr_ref = {e["step"]: e["lr"] for e in events(reference, "step")}
    lr_got = {e["step"]: e["lr"] for e in events(paths, "step")}
    assert [lr_got[s] for s in range(8, 21)] == pytest.approx([lr_ref[s] for s in range(8, 21)])


def test_a_torn_checkpoint_is_skipped_on_resume(tmp_path, cache, reference):
    run = tmp_path / "torn"
    shutil.copytree(reference.root, run)
    paths = type(reference)(run)
    (paths.checkpoints / "step20" / ck.MARKER).unlink()            # killed after DeepSpeed's files...
    (paths.checkpoints / "step15" / ck.MARKER).unlink()            # ...or in the middle of them
    next((paths.checkpoints / "step15").glob("*optim_states.pt")).unlink()
    (paths.checkpoints / "latest").write_text("step20")             # even a pointer to the torn one
    paths.final.rename(run / "final-before")
    result = run_engine(paths, "--resume", cache=cache)
    assert result["state"] == "completed", result
    started = events(paths, "run_started")[-1]
    assert (started["resumed_from"], started["start_step"]) == ("step10", 10)
    ref, got = losses(reference), losses(paths)
    assert [got[s] for s in range(11, 21)] == pytest.approx([ref[s] for s in range(11, 21)], rel=1e-5)
    assert all((paths.checkpoints / t / ck.MARKER).exists() for t in ("step15", "step20"))  # rewritten whole


def test_a_complete_checkpoint_damaged_afterwards_is_set_aside_and_the_one_before_it_resumes(tmp_path, cache,
                                                                                             reference):
    """A checkpoint marked complete, then cut short (a copy, a disk that failed later): DeepSpeed's load
    raised torch's "failed finding central directory", naming no file and no way on; then the run ended
    naming the file and what to remove. Now a run of one process sets the damaged one aside (nothing is
    deleted), says so in an alert, and resumes from the one before it, training as the uninterrupted run."""
    run = tmp_path / "damaged"
    shutil.copytree(reference.root, run)
    paths = type(reference)(run)
    states = next((paths.checkpoints / "step20").glob("*model_states.pt"))
    states.write_bytes(states.read_bytes()[:100])
    paths.final.rename(run / "final-before")
    result = run_engine(paths, "--resume", cache=cache)
    assert result["state"] == "completed", result
    assert events(paths, "run_started")[-1]["resumed_from"] == "step15"
    alert = events(paths, "alert")[-1]
    assert alert["kind"] == "checkpoint" and alert["message"].startswith(f"checkpoint step20 is damaged: {states.name}: ")
    assert "set aside as damaged-step20" in alert["message"] and alert["hint"].startswith("resuming from step15")
    aside = paths.checkpoints / "damaged-step20"
    assert len((aside / states.name).read_bytes()) == 100  # kept as it was found
    assert (paths.checkpoints / "step20" / ck.MARKER).exists()  # written again, whole
    # the same as removing the damaged one by hand and resuming: to the bit (a resume from step15 and the
    # uninterrupted run differ in the last bits from CPU Adam's bias correction, docs/nvme_offload.md)
    by_hand = type(reference)(tmp_path / "by-hand")
    shutil.copytree(reference.root, by_hand.root)
    shutil.rmtree(by_hand.checkpoints / "step20")
    by_hand.final.rename(by_hand.root / "final-before")
    assert run_engine(by_hand, "--resume", cache=cache)["state"] == "completed"
    ref, got = losses(by_hand), losses(paths)
    assert [got[s] for s in range(16, 21)] == [ref[s] for s in range(16, 21)]
    assert [got[s] for s in range(16, 21)] == pytest.approx([losses(reference)[s] for s in range(16, 21)], rel=1e-4)


def test_disk_full_during_a_save_fails_clearly_and_keeps_the_previous_checkpoint(tmp_path, cache):
    paths = make_run(tmp_path / "full", save_interval=5, log_interval=1)
    assert run_engine(paths, "--stop-after", "3", cache=cache)["state"] == "stopped"
    assert (paths.checkpoints / "latest").read_text() == "step3"
    # The optimizer-state file of this model is ~12 MB: a 4 MB file-size limit makes the next save fail
    # the way a full disk does (the write returns an error), while the small event lines still go through.
    result = run_engine(paths, "--resume", "--fsize-limit", str(4_000_000), cache=cache)
    assert result["type"] == "RunError", result
    assert "checkpoint at step 5 could not be written" in result["error"] and "step3 is intact" in result["error"]
    alert = events(paths, "alert")[-1]
    assert alert["kind"] == "disk" and "zerotui resume" in alert["hint"]
    # keep_checkpoints is 2 here: lowering it (in plan.yaml: resume takes no options) is offered
    assert "lower keep_checkpoints from 2 in the run's plan.yaml" in alert["hint"] and "--keep" not in alert["hint"]
    assert (paths.checkpoints / "latest").read_text() == "step3"
    assert (paths.checkpoints / "step3" / ck.MARKER).exists() and not (paths.checkpoints / "step5").exists()
    assert [e["step"] for e in events(paths, "checkpoint")] == [3]  # never announced


def test_a_resume_whose_every_checkpoint_is_damaged_fails_rather_than_start_again_from_step_0(tmp_path, cache,
                                                                                            reference):
    """It once set the last one aside and trained from step 0 under the same name, replacing final/ at
    the end. Now the run fails naming the checkpoint, keeps final/, and a later resume is refused before
    launch until the user asks for a restart (`zerotui resume --restart`)."""
    from zerotui.core.errors import RunError
    from zerotui.core.run.progress import require_progress_kept

    run = tmp_path / "all-damaged"
    shutil.copytree(reference.root, run)
    paths = type(reference)(run)
    for tag in ("step5", "step10", "step15"):
        shutil.rmtree(paths.checkpoints / tag)
    states = next((paths.checkpoints / "step20").glob("*model_states.pt"))
    states.write_bytes(states.read_bytes()[:100])
    final_bytes = {p.name: p.read_bytes() for p in paths.final.iterdir() if p.is_file()}
    steps_before = len(events(paths, "step"))
    result = run_engine(paths, "--resume", cache=cache)
    assert result.get("type") == "RunError", result  # the worker makes it the failed run's reason
    assert "no checkpoint of the run loads (the last, step20, is damaged" in result["error"]
    assert len(events(paths, "step")) == steps_before  # not one step trained again
    assert {p.name: p.read_bytes() for p in paths.final.iterdir() if p.is_file()} == final_bytes
    assert (paths.checkpoints / "damaged-step20" / states.name).exists()  # set aside, nothing deleted
    with pytest.raises(RunError) as err:
        require_progress_kept(paths)
    assert "no complete checkpoint left" in err.value.message and "set aside as damaged" in err.value.message
    assert f"zerotui resume {paths.name} --restart" in err.value.hint


@pytest.mark.parametrize("edit", [{"stage": 3}, {"method": "lora"}], ids=["stage", "method"])
def test_a_plan_edited_since_its_checkpoint_in_what_shapes_the_files_is_named(tmp_path, cache, reference, edit):
    """plan.yaml's stage or method changed after the checkpoint: DeepSpeed's load raised a bare
    AssertionError or a KeyError on a weight's name after the whole start-up. Now `resume` refuses before
    launching, naming the change, and the load itself names the checkpoint if it gets that far."""
    from zerotui.core.errors import RunError
    from zerotui.core.plan.schema import load_plan
    from zerotui.core.run.progress import require_same_shape

    run = tmp_path / "edited"
    shutil.copytree(reference.root, run)
    paths = type(reference)(run)
    plan = load_plan(paths.plan)
    (field, value), = edit.items()
    before = getattr(plan, field)
    paths.plan.write_text(plan.with_changes(**edit).to_yaml())
    with pytest.raises(RunError) as err:
        require_same_shape(paths, load_plan(paths.plan))
    assert f"changed since checkpoint step20 was written ({field} {before} → {value})" in err.value.message
    assert str(paths.plan) in err.value.hint
    if field == "method":  # a LoRA model's load looks for adapter weights in a full checkpoint: KeyError
        paths.final.rename(run / "final-before")
        result = run_engine(paths, "--resume", cache=cache)
        assert result.get("type") == "RunError", result
        assert "checkpoint step20 does not load into this run's model and ZeRO stage" in result["error"]
