"""A run whose runs folder cannot take one of its checkpoints is refused at launch (core/run/storage.py
check_checkpoint_room, sized by core/estimate/checkpoint_size.py): the 7B full fine-tune that trained on an
H200 and failed at its first checkpoint, with 51.1 GiB free, would have been told before it started. One
with room for one checkpoint but not for the keep_checkpoints it keeps is launched with a warning."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from places import REPO
from zerotui.core.errors import StorageError
from zerotui.core.estimate.checkpoint_size import checkpoint_bytes, checkpoint_disk_bytes
from zerotui.core.model.spec import spec_for_plan
from zerotui.core.plan.schema import Plan, plan_from_dict
from zerotui.core.run.storage import check_checkpoint_room, free_bytes

GIB = 2**30


def test_the_failed_7b_run_would_have_been_refused():
    path = REPO / "benchmarks/results/seed-scenarios-full7bl-h200-2026-12-05.json"
    row = json.loads(path.read_text())["scenarios"]["7b-full-fit24-unpinned"]
    assert "checkpoint at step 4 could not be written" in row["reason"] and "(51.1 GiB free)" in row["reason"]
    plan = plan_from_dict({**row["plan"], "model": "llama-2-7b", "data": "sample"})
    one = checkpoint_bytes(plan, spec_for_plan(plan))
    assert one == 12 * 6_738_415_616                    # stage 3: fp32 master and two moments, no module copy
    assert one > 51.1 * GIB


def test_the_sizes_follow_the_method_and_the_stage():
    full = Plan(model="llama-2-7b", stage=2, precision="bf16")
    spec = spec_for_plan(full)
    assert checkpoint_bytes(full, spec) == 14 * spec.params_total            # bf16 weights + 12 bytes
    assert checkpoint_bytes(full.with_changes(stage=3), spec) == 12 * spec.params_total
    assert checkpoint_bytes(full.with_changes(stage=0, precision="fp32"), spec) == 12 * spec.params_total
    lora = full.with_changes(method="lora")
    assert checkpoint_bytes(lora, spec) < 0.01 * checkpoint_bytes(full, spec)  # adapters alone
    keep = full.with_changes(keep_checkpoints=2, save_interval=100)
    assert checkpoint_disk_bytes(keep, spec) == 3 * checkpoint_bytes(full, spec)  # two kept, the third written
    once = full.with_changes(save_interval=0, save_minutes=0)
    assert checkpoint_disk_bytes(once, spec) == checkpoint_bytes(full, spec)     # only the end's


def test_a_folder_without_room_for_one_is_refused_unless_forced(tmp_path):
    free = free_bytes(tmp_path)
    assert free is not None
    with pytest.raises(StorageError) as err:
        check_checkpoint_room(tmp_path, free + GIB, 3 * (free + GIB))
    text = str(err.value)
    assert str(tmp_path) in text and "would fail at its first save" in text
    assert "--runs-dir" in err.value.hint and "--method lora" in err.value.hint and "--force" in err.value.hint
    check_checkpoint_room(tmp_path, free + GIB, 3 * (free + GIB), force=True)
    check_checkpoint_room(tmp_path, free // 2, 3 * free)  # room for one: launched (the rest is the user's)


def test_a_resume_without_room_for_its_next_checkpoint_is_refused_unless_forced(tmp_path, monkeypatch):
    # It trained from its checkpoint and failed again at the same save (a 30 MiB disk, 14.6 MiB free).
    from zerotui.core.run import start
    from zerotui.core.run.folder import RunPaths, write_status

    free = free_bytes(tmp_path)
    with pytest.raises(StorageError) as err:
        check_checkpoint_room(tmp_path, free + GIB, 3 * (free + GIB), resume=True)
    assert f"the run folder {tmp_path}" in str(err.value) and "would fail at its next save" in str(err.value)
    assert "--force resumes anyway" in err.value.hint and "--runs-dir" not in err.value.hint
    # and resume_run asks it, with the run's own folder, before anything is launched
    seen = []

    def no_room(folder, one, most, force, resume, held):
        seen.append((folder, resume))
        raise StorageError("no room", "free space")

    monkeypatch.setattr(start, "check_checkpoint_room", no_room)
    paths = RunPaths(tmp_path / "20260101-000000-r")
    (paths.root / "checkpoints").mkdir(parents=True)
    paths.plan.write_text(Plan(name="r", model="tiny", data="sample", max_steps=5).to_yaml())
    write_status(paths, state="stopped", step=0)
    with pytest.raises(StorageError):
        start.resume_run(paths)
    assert seen == [(paths.root, True)] and read_state(paths) == "stopped"


def read_state(paths):
    from zerotui.core.run.folder import read_status

    return read_status(paths)["state"]


MIB = 2**20


@pytest.fixture
def free_is(monkeypatch):
    """Free space as stated, not as the shared disk has it this moment."""
    from zerotui.core.run import storage

    def set_free(n):
        monkeypatch.setattr(storage, "free_bytes", lambda folder: n)
    return set_free


def test_room_for_one_but_not_for_those_kept_is_a_warning_naming_both_and_what_fits(tmp_path, free_is):
    # keep_checkpoints 2: two kept and the third written before the oldest goes, 3 x 15 MiB on 40 MiB free
    free_is(40 * MIB)
    line = check_checkpoint_room(tmp_path, 15 * MIB, 45 * MIB)
    assert line is not None and str(tmp_path) in line
    assert "40.0 MiB free" in line and "keeping 2 checkpoint(s) of 15.0 MiB takes up to 45.0 MiB" in line
    assert "fail at a later save" in line and "set keep_checkpoints to 1 (--keep-checkpoints 1)" in line
    assert "or free 5.0 MiB" in line
    free_is(45 * MIB)
    assert check_checkpoint_room(tmp_path, 15 * MIB, 45 * MIB) is None  # it fits: nothing to say
    # keep_checkpoints 1 on room for one: only a checkpoint at the end can be written
    free_is(20 * MIB)
    line = check_checkpoint_room(tmp_path, 15 * MIB, 30 * MIB)
    assert "save only at the end (--save-interval 0 --save-minutes 0)" in line
    # forced past the refusal: still said, with the figure
    free_is(10 * MIB)
    assert "fail at its first save" in check_checkpoint_room(tmp_path, 15 * MIB, 45 * MIB, force=True)


def test_a_resume_counts_the_checkpoints_its_folder_holds_already(tmp_path, free_is):
    free_is(20 * MIB)
    assert check_checkpoint_room(tmp_path, 15 * MIB, 45 * MIB, resume=True, held=2) is None  # needs one more
    line = check_checkpoint_room(tmp_path, 15 * MIB, 45 * MIB, resume=True, held=1)
    assert f"the run folder {tmp_path}" in line and "1 of them there already" in line
    assert "set keep_checkpoints to 1 in the run's plan.yaml" in line and "--keep" not in line


def test_train_prints_the_warning_and_the_run_log_keeps_it(capsys, tmp_path, free_is, monkeypatch):
    from cli_capture import run

    from zerotui.core.run import spare_claim, start
    from zerotui.core.run.folder import RunPaths

    free_is(40 * MIB)  # as on the 40 MiB disk where such a run failed at its third save (15.3 MiB each)
    monkeypatch.setattr(spare_claim, "claimable", lambda *a: False)
    monkeypatch.setattr(start, "_spawn", lambda argv, env, log: 4242)  # the launch, not the training
    code, out, err = run(capsys, "train", "tiny-cpu-demo", "--runs-dir", str(tmp_path / "runs"),
                         "--save-interval", "10", "--keep-checkpoints", "3", "--json")
    assert code == 0, err
    started = json.loads(out)
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 1 and "keeping 3 checkpoint(s) of 15.3 MiB takes up to 61.1 MiB" in warnings[0]
    assert "set keep_checkpoints to 1 (--keep-checkpoints 1)" in warnings[0]
    log = RunPaths(Path(started["path"])).log.read_text()
    assert f"zerotui: {warnings[0]}" in log.splitlines()
