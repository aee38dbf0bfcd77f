"""Checkpoint folders and states, without an engine: only complete ones count, the last K are kept, a
full disk is recognised, the plan hash, the RNG state round trip.
"""
from __future__ import annotations

import errno
import json
import random

import numpy as np
import torch

from zerotui.core.train import checkpoint as ck
from zerotui.core.plan.schema import Plan


def fake_ckpt(folder, step, complete=True):
    p = folder / f"step{step}"
    p.mkdir(parents=True)
    (p / "mp_rank_00_model_states.pt").write_bytes(b"x" * 10)
    if complete:
        (p / ck.MARKER).write_text(json.dumps({"step": step}))
    return p


def test_newest_complete_skips_torn_and_foreign_folders(tmp_path):
    fake_ckpt(tmp_path, 5)
    fake_ckpt(tmp_path, 10)
    fake_ckpt(tmp_path, 15, complete=False)
    (tmp_path / "global_step99").mkdir()  # not ours
    (tmp_path / "step20").write_text("a file, not a folder")
    assert [c.step for c in ck.list_checkpoints(tmp_path)] == [5, 10, 15]
    assert ck.newest_complete(tmp_path).tag == "step10"
    assert ck.newest_complete(tmp_path / "missing") is None


def test_prune_keeps_the_last_k_complete_and_drops_stale_torn_ones(tmp_path):
    for s in (5, 10, 20, 25):
        fake_ckpt(tmp_path, s)
    fake_ckpt(tmp_path, 15, complete=False)  # torn, older than the newest complete: garbage
    fake_ckpt(tmp_path, 30, complete=False)  # torn, newer: left for resume to decide
    saver = ck.Checkpointer(None, tmp_path, Plan(keep_checkpoints=2), 0, lambda *a, **k: None, lambda: None, False)
    saver.prune()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step20", "step25", "step30"]
    saver.remove_newer_torn(25)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step20", "step25"]


def test_disk_full_is_recognised_through_torch_wrapping():
    assert ck.is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    try:
        try:
            raise OSError(errno.EFBIG, "File too large")
        except OSError as inner:
            raise RuntimeError("[enforce fail at inline_container.cc] PytorchStreamWriter failed") from inner
    except RuntimeError as outer:
        assert ck.is_disk_full(outer)
    assert ck.is_disk_full(RuntimeError("PytorchStreamWriter failed writing file data/3: file write failed"))
    assert ck.is_disk_full(RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 5056 vs 4950"))
    assert not ck.is_disk_full(RuntimeError("CUDA out of memory"))


def test_plan_hash_follows_the_trajectory_not_the_logging():
    base = Plan()
    assert ck.plan_hash(base) == ck.plan_hash(base.with_changes(log_interval=1, save_interval=7, name="other"))
    assert ck.plan_hash(base) != ck.plan_hash(base.with_changes(lr=1e-4))


def test_rng_state_round_trip():
    ck.set_rng_state(ck.rng_state())  # a no-op round trip must not fail
    state = ck.rng_state()
    expect = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    ck.set_rng_state(state)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expect
