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
from zerotui.core.train import checkpoint_files as files
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
    assert files.is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    try:
        try:
            raise OSError(errno.EFBIG, "File too large")
        except OSError as inner:
            raise RuntimeError("[enforce fail at inline_container.cc] PytorchStreamWriter failed") from inner
    except RuntimeError as outer:
        assert files.is_disk_full(outer)
    assert files.is_disk_full(RuntimeError("PytorchStreamWriter failed writing file data/3: file write failed"))
    assert files.is_disk_full(RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 5056 vs 4950"))
    assert not files.is_disk_full(RuntimeError("CUDA out of memory"))


def test_plan_hash_follows_the_trajectory_not_the_logging():
    base = Plan()
    assert ck.plan_hash(base) == ck.plan_hash(base.with_changes(log_interval=1, save_interval=7, name="other"))
    assert ck.plan_hash(base) != ck.plan_hash(base.with_changes(lr=1e-4))


def test_rng_state_round_trip(tmp_path):
    """Through the file, loaded with weights_only=True: what a resume does."""
    files.set_rng_state(files.rng_state())  # a no-op round trip must not fail
    torch.save(files.rng_state(), tmp_path / "rng.pt")
    expect = (random.random(), float(np.random.rand()), float(np.random.randn()), float(torch.rand(1)))
    files.set_rng_state(files.load_rng_file(tmp_path / "rng.pt"))
    assert (random.random(), float(np.random.rand()), float(np.random.randn()), float(torch.rand(1))) == expect


def test_a_planted_pickle_in_the_rng_file_is_refused_without_running(tmp_path):
    import os
    import pickle

    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    path = tmp_path / "zerotui_rng_rank0.pt"
    with open(path, "wb") as fh:
        pickle.dump({"python": Planted(), "numpy": 1, "torch": 2}, fh)
    assert files.load_rng_file(path) is None
    assert not marker.exists()
    path.write_bytes(b"torn")
    assert files.load_rng_file(path) is None


def test_a_dry_run_of_a_save_names_the_gpu_tensors_and_the_pool_pins_one_buffer_each():
    """PinnedPool (core/train/background_save.py) on meta tensors, which stand in for GPU ones here:
    what a save would copy is wanted once per tensor (a tied weight once), host tensors never; after
    growing, a snapshot takes each buffer once, and a second save finds them free again."""
    import torch

    from zerotui.core.train.background_save import PinnedPool, RecordEngine, snapshot

    w = torch.empty(4, 3, device="meta")
    state = {"module": {"a.weight": w, "b.weight": w, "bias": torch.empty(3, device="meta")},
             "host": torch.zeros(5), "step": 7}
    pool = PinnedPool(pin=False)
    RecordEngine(pool).save(state, "unused")
    assert sorted(pool.wanted, key=str) == sorted([((4, 3), torch.float32), ((3,), torch.float32)], key=str)
    pool.grow(room=1 << 20)
    assert pool.pinned_bytes == (12 + 3) * 4 and not pool.wanted
    first = pool.take(torch.empty(4, 3, device="meta"))
    assert first is not None and first.device.type == "cpu" and first.shape == (4, 3)
    assert pool.take(torch.empty(4, 3, device="meta")) is None  # one buffer of that shape, now in use
    assert pool.wanted == [((4, 3), torch.float32)]  # ... so the next growth adds one
    pool.release_all()
    assert pool.take(torch.empty(4, 3, device="meta")) is first
    # a snapshot copies host tensors and deep-copies other values, so later steps cannot change them
    host = torch.ones(3)
    live = {"scale": [2.0], "t": host}
    snap = snapshot(live, {}, None)
    host.add_(1)
    live["scale"].append(4.0)
    assert snap["t"].tolist() == [1.0, 1.0, 1.0] and snap["scale"] == [2.0]


def test_the_pool_leaves_room_for_a_foreground_saves_copy_of_the_largest_storage():
    """A foreground save (the end's, a stop's) is torch.save, which copies each GPU storage whole to the
    host: the pool, which pins what free RAM it can, leaves room for the largest one it has seen, views
    of one flat buffer counted as that buffer."""
    import torch

    from zerotui.core.train.background_save import MARGIN_BYTES, PinnedPool, RecordEngine, pool_room

    flat = torch.empty(1000, device="meta")  # stands in for ZeRO-1/2's flat 16-bit buffer
    state = {"module": {"a": flat[:600].view(20, 30), "b": flat[600:]}, "small": torch.empty(7, device="meta")}
    pool = PinnedPool(pin=False)
    RecordEngine(pool).save(state, "unused")
    assert pool.largest_storage == 1000 * 4
    gib = 1 << 30
    assert pool_room(10 * gib, pool.largest_storage) == 10 * gib - 2 * MARGIN_BYTES - 4000
    assert pool_room(MARGIN_BYTES, pool.largest_storage) == 0


def test_growth_stops_at_the_room_it_is_given():
    import torch

    from zerotui.core.train.background_save import PinnedPool

    pool = PinnedPool(pin=False)
    pool.wanted = [((256,), torch.float32), ((256,), torch.float32)]
    pool.grow(room=1500)  # one 1 KiB buffer fits, the second would not
    assert pool.pinned_bytes == 1024


def test_a_resume_refuses_a_planted_object_in_a_checkpoint_file_and_names_the_checkpoint(tmp_path):
    """The engine reads its files through the checkpoint engine (mapped, weights only): a file holding
    a class DeepSpeed never pickles is refused unread, as a RunError naming that checkpoint."""
    import os

    import pytest

    from zerotui.core.errors import RunError

    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    folder = tmp_path / "checkpoints" / "step4"
    folder.mkdir(parents=True)
    torch.save({"module": {}, "extra": Planted()}, folder / "mp_rank_00_model_states.pt")

    class Engine:  # DeepSpeed's load_checkpoint reads each file through engine.checkpoint_engine.load
        checkpoint_engine = None

        def load_checkpoint(self, load_dir, tag, **_kw):
            return self.checkpoint_engine.load(os.path.join(load_dir, tag, "mp_rank_00_model_states.pt")), {}

    saver = ck.Checkpointer(Engine(), tmp_path / "checkpoints", Plan(), 0, lambda *a, **k: None, lambda: None, False)
    with pytest.raises(RunError, match=r"checkpoints/step4 holds objects .* refused unread"):
        saver.load(ck.CheckpointInfo("step4", 4, folder, True))
    assert not marker.exists()
