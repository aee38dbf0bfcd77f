"""A save that fails while DeepSpeed copies its recovery scripts leaves no torn zero_to_fp32.py.

DeepSpeed (engine.py ``_copy_recovery_script``) copies zero_to_fp32.py and zero_to_torch.py into the
checkpoints folder at every save with ``shutil.copyfile``, over the copies already there. On a disk that
filled during that copy the run failed at that save, as it should, and left a 0-byte zero_to_fp32.py:
the script a person reaches for to get the weights out of the checkpoints that are still intact.

Here DeepSpeed's own method runs, on an engine that saves the way DeepSpeed's does (its files, then the
scripts from rank 0); only ``copyfile`` is made to fail half-way, as ENOSPC does.
"""
from __future__ import annotations

import errno
import os
import types

import pytest

from zerotui.core.errors import RunError
from zerotui.core.plan.schema import Plan
from zerotui.core.train import checkpoint as ck
from zerotui.core.train.checkpoint_files import RECOVERY_TMP_PREFIX

ds_engine = pytest.importorskip("deepspeed.runtime.engine")
SCRIPTS = ("zero_to_fp32.py", "zero_to_torch.py")


class Engine:
    """What Checkpointer.save touches of a DeepSpeed engine, with DeepSpeed's real script copy."""

    checkpoint_engine = None

    def __init__(self) -> None:
        for name in ("_copy_recovery_script", "_change_recovery_script_permissions"):
            setattr(self, name, types.MethodType(getattr(ds_engine.DeepSpeedEngine, name), self))

    def save_checkpoint(self, save_dir, tag, client_state, save_latest, exclude_frozen_parameters):
        os.makedirs(os.path.join(save_dir, tag))
        with open(os.path.join(save_dir, tag, "zero_pp_rank_0_mp_rank_00_optim_states.pt"), "wb") as fh:
            fh.write(b"\0" * 1000)
        self._copy_recovery_script(save_dir)  # as _save_zero_checkpoint does, after the states


def half_then_enospc(src, dst, *args, **kwargs):
    with open(src, "rb") as fh:
        data = fh.read()
    with open(dst, "wb") as fh:
        fh.write(data[: len(data) // 2])
    raise OSError(errno.ENOSPC, "No space left on device", dst)


def saver(folder):
    return ck.Checkpointer(Engine(), folder, Plan(keep_checkpoints=2), 0, lambda *a, **k: None, lambda: None, False)


def originals():
    base = os.path.dirname(os.path.dirname(ds_engine.__file__))
    return {name: open(os.path.join(base, "utils", name), "rb").read() for name in SCRIPTS}


def test_a_failed_copy_keeps_the_whole_script_of_the_save_before(tmp_path, monkeypatch):
    folder = tmp_path / "checkpoints"
    s = saver(folder)
    s.save(1, {"plan_hash": "x"}, "interval")
    whole = originals()
    assert {name: (folder / name).read_bytes() for name in SCRIPTS} == whole
    assert os.stat(folder / "zero_to_fp32.py").st_mode & 0o100  # DeepSpeed's permission bits survive

    monkeypatch.setattr(ds_engine, "copyfile", half_then_enospc)
    with pytest.raises(RunError) as err:
        s.save(2, {"plan_hash": "x"}, "interval")
    assert "checkpoint at step 2 could not be written" in str(err.value) and "the disk is full" in str(err.value)
    assert "step1 is intact" in str(err.value)
    # the scripts are those of the save before, whole; nothing of the failed copy is left
    assert {name: (folder / name).read_bytes() for name in SCRIPTS} == whole
    assert sorted(p.name for p in folder.iterdir()) == ["latest", "step1", *SCRIPTS]


def test_a_first_save_that_fails_leaves_no_script_at_all(tmp_path, monkeypatch):
    folder = tmp_path / "checkpoints"
    monkeypatch.setattr(ds_engine, "copyfile", half_then_enospc)
    with pytest.raises(RunError):
        saver(folder).save(1, {"plan_hash": "x"}, "interval")
    assert list(folder.iterdir()) == []  # no 0-byte or half zero_to_fp32.py, no temporary folder


def test_a_copy_left_by_a_killed_worker_is_cleared_at_the_next_save(tmp_path):
    folder = tmp_path / "checkpoints"
    stale = folder / f"{RECOVERY_TMP_PREFIX}dead"
    stale.mkdir(parents=True)
    (stale / "zero_to_fp32.py").write_bytes(b"")
    s = saver(folder)
    s.save(1, {"plan_hash": "x"}, "interval")
    assert not stale.exists() and (folder / "zero_to_fp32.py").read_bytes() == originals()["zero_to_fp32.py"]
    assert not any(p.name.startswith(RECOVERY_TMP_PREFIX) for p in folder.iterdir())
