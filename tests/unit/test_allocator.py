"""PyTorch's allocator setting (core/plan/allocator.py), and the worker and the spare applying it."""
import os

import pytest

from zerotui.core.plan import allocator
from zerotui.core.plan.schema import Plan


def _plan(**kw):
    return Plan(**{"model": "tiny", "data": "sample", "stage": 3, "seq_len": 4096, **kw})


def _worker(plan, said):
    return type("W", (), {"plan": plan, "emit": lambda self, kind, **f: said.append((kind, f))})()


@pytest.mark.parametrize("kw", [
    {}, {"stage": 2, "seq_len": 1024}, {"method": "lora", "stage": 0},
    {"method": "qlora", "stage": 2, "seq_len": 1024}, {"method": "qlora", "stage": 0, "seq_len": 8192},
    {"method": "qlora", "stage": 3, "seq_len": 2049}])
def test_every_method_gets_expandable_segments(kw, monkeypatch):
    from zerotui.core.run import worker as worker_mod

    assert allocator.effective_conf({}) == "expandable_segments:True"
    assert allocator.expandable_in_effect({}) is True
    env = {}
    assert allocator.set_for(env) is True and env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", allocator.MARK):
        monkeypatch.delenv(name, raising=False)
    said = []
    worker_mod.Worker._allocator(_worker(_plan(**kw), said))  # the worker of a plan of this method
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True" and len(said) == 1


@pytest.mark.parametrize("name", ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"])
@pytest.mark.parametrize("value, expandable", [("", False), ("max_split_size_mb:256", False),
                                               ("expandable_segments:False", False),
                                               ("garbage_collection_threshold:0.8, expandable_segments:True", True)])
def test_a_users_own_setting_is_kept_and_read(name, value, expandable):
    env = {name: value}
    assert allocator.effective_conf(env) == value
    assert allocator.expandable_in_effect(env) is expandable
    assert allocator.set_for(dict(env)) is False


def test_torchs_newer_variable_wins_over_the_older_one():
    env = {"PYTORCH_ALLOC_CONF": "expandable_segments:False", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert allocator.expandable_in_effect(env) is False


def test_the_worker_sets_it_for_the_plan_and_says_so(tmp_path, monkeypatch):
    from zerotui.core.run import worker as worker_mod

    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    said = []
    fake = _worker(_plan(), said)
    worker_mod.Worker._allocator(fake)
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert said and said[0][0] == "log" and "expandable_segments:True" in said[0][1]["message"]
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "")  # the user's (empty) value is kept, and nothing said
    said.clear()
    worker_mod.Worker._allocator(fake)
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "" and said == []
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF")
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "expandable_segments:False")  # torch's newer name counts too
    worker_mod.Worker._allocator(fake)
    assert "PYTORCH_CUDA_ALLOC_CONF" not in os.environ and said == []


def test_a_spare_starts_with_expandable_segments_and_its_worker_says_they_are_zerotuis():
    env = {}
    assert allocator.set_for(env) is True and env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    # zerotui's own setting is not the user's: the run a spare is handed says it set it (set_for is True)
    assert not allocator.user_set(env) and allocator.set_for(env) is True
    assert allocator.effective_conf(env) == "expandable_segments:True"
    users = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}  # the same value, set by the user
    assert allocator.user_set(users) and allocator.set_for(dict(users)) is False
    mine = {"PYTORCH_ALLOC_CONF": "max_split_size_mb:256"}  # the user's setting: the spare has it too
    assert allocator.set_for(dict(mine)) is False and allocator.effective_conf(mine) == "max_split_size_mb:256"
    # zerotui's mark beside a user's newer variable: the user's wins and is read as theirs
    both = {"PYTORCH_ALLOC_CONF": "", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", allocator.MARK: "1"}
    assert allocator.user_set(both) and allocator.expandable_in_effect(both) is False


def test_a_spare_sets_it_before_importing_anything(tmp_path, monkeypatch):
    """The allocator is fixed when CUDA is first used, which the spare's imports may do (bitsandbytes)."""
    from zerotui.core.run import spare_worker

    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", allocator.MARK):
        monkeypatch.delenv(name, raising=False)
    seen = []
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(""))  # its supervisor ends it unclaimed
    assert spare_worker.main(tmp_path, run_worker=lambda argv: 1,
                             warm=lambda: seen.append(os.environ.get("PYTORCH_CUDA_ALLOC_CONF")) or []) == 0
    assert seen == ["expandable_segments:True"]


def test_a_run_on_a_machine_without_a_gpu_gets_no_setting(monkeypatch):
    from zerotui.core.hardware.types import GpuInfo, Hardware
    from zerotui.core.run import worker as worker_mod

    said = []
    fake = type("W", (), {"plan": _plan(), "hardware": Hardware(gpus=[]),
                          "emit": lambda self, kind, **f: said.append((kind, f))})()
    worker_mod.Worker._allocator(fake)
    assert "PYTORCH_CUDA_ALLOC_CONF" not in os.environ and said == []
    fake.hardware = Hardware(gpus=[GpuInfo(index=0, name="g", total_bytes=2**34, free_bytes=2**34,
                                           compute_capability=(9, 0), bf16=True)])
    worker_mod.Worker._allocator(fake)
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True" and len(said) == 1
