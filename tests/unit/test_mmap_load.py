"""Checkpoint files are loaded mapped (core/train/mmap_load.py), with the old file format loaded as before."""
import torch

from zerotui.core.train.mmap_load import MmapLoads, mapped_loads


def _mapped_from(tensor, path):
    """The tensor's memory lies in a mapping of ``path`` (/proc/self/maps)."""
    ptr = tensor.data_ptr()
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith(str(path)):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= ptr < hi:
                return True
    return False


class _Inner:
    def __init__(self):
        self.loads = []
        self.name = "inner"

    def load(self, path, map_location=None):
        self.loads.append(path)
        return torch.load(path, map_location=map_location, weights_only=False)


def test_a_zip_checkpoint_is_mapped_and_equal(tmp_path):
    state = {"module": {"w": torch.arange(12.0).reshape(3, 4)}, "step": 7, "opt": [torch.ones(5, dtype=torch.bfloat16)]}
    path = tmp_path / "mp_rank_00_model_states.pt"
    torch.save(state, path)
    inner = _Inner()
    got = MmapLoads(inner).load(str(path), map_location=lambda storage, loc: storage)
    assert inner.loads == []  # not the copying path
    assert torch.equal(got["module"]["w"], state["module"]["w"]) and got["step"] == 7
    assert torch.equal(got["opt"][0], state["opt"][0]) and got["opt"][0].dtype == torch.bfloat16
    assert _mapped_from(got["module"]["w"], path)  # a view of the file, not a copy
    got["module"]["w"].add_(1)  # private mapping: writing the tensor never writes the file
    assert torch.equal(torch.load(path, weights_only=False)["module"]["w"], state["module"]["w"])


def test_the_old_file_format_is_loaded_unmapped_and_weights_only(tmp_path):
    path = tmp_path / "old.pt"
    torch.save({"x": torch.ones(3)}, path, _use_new_zipfile_serialization=False)
    inner = _Inner()
    got = MmapLoads(inner).load(str(path), map_location=torch.device("cpu"))
    assert inner.loads == []  # never DeepSpeed's own load, which unpickles anything
    assert torch.equal(got["x"], torch.ones(3))


def _planted(tmp_path, old_format: bool):
    import os

    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    path = tmp_path / "mp_rank_00_model_states.pt"
    torch.save({"module": {"w": torch.ones(2)}, "extra": Planted()}, path,
               _use_new_zipfile_serialization=not old_format)
    return path, marker


def test_a_planted_object_in_a_checkpoint_file_is_refused_without_running(tmp_path):
    import pickle

    import pytest

    for old_format in (False, True):
        path, marker = _planted(tmp_path, old_format)
        with pytest.raises(pickle.UnpicklingError, match="weights_only"):
            MmapLoads(_Inner()).load(str(path), map_location=torch.device("cpu"))
        assert not marker.exists(), old_format


def test_the_classes_deepspeed_pickles_are_allowed(tmp_path):
    from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler
    from deepspeed.runtime.zero.config import ZeroStageEnum

    path = tmp_path / "mp_rank_00_model_states.pt"
    scaler = DynamicLossScaler(init_scale=2.0**16, scale_window=1000, min_scale=1, delayed_shift=2,
                               consecutive_hysteresis=False)
    torch.save({"scaler": scaler, "stage": ZeroStageEnum.weights}, path)
    got = MmapLoads(_Inner()).load(str(path), map_location=torch.device("cpu"))
    assert got["scaler"].cur_scale == 2.0**16 and got["stage"] == ZeroStageEnum.weights


def test_the_engine_gets_its_own_checkpoint_engine_back_even_after_an_error(tmp_path):
    class Engine:
        checkpoint_engine = _Inner()

    engine = Engine()
    own = engine.checkpoint_engine
    try:
        with mapped_loads(engine):
            assert isinstance(engine.checkpoint_engine, MmapLoads)
            assert engine.checkpoint_engine.name == "inner"  # everything else is the wrapped engine's
            raise OSError("disk gone")
    except OSError:
        pass
    assert engine.checkpoint_engine is own


def test_no_optimizer_state_stays_mapped_after_the_load(tmp_path):
    """A CPU optimizer keeps loaded tensors as they are (same dtype and device): without the release its
    Adam moments would be views of the checkpoint file, and the file would keep its disk space after
    keep-last-K removes it. The engine's optimizer may wrap the torch one (ZeRO, bf16): both are walked."""
    p = torch.nn.Parameter(torch.randn(4096))
    opt = torch.optim.Adam([p])
    p.grad = torch.randn(4096)
    opt.step()
    path = tmp_path / "optim_states.pt"
    torch.save(opt.state_dict(), path)

    class Wrapper:  # like DeepSpeed's ZeRO optimizer: the torch optimizer inside
        def __init__(self, inner):
            self.optimizer = inner

    class Engine:
        checkpoint_engine = _Inner()

    engine, restored = Engine(), torch.optim.Adam([p])
    engine.optimizer = Wrapper(restored)
    with mapped_loads(engine):
        restored.load_state_dict(engine.checkpoint_engine.load(str(path), map_location=torch.device("cpu")))
        assert _mapped_from(restored.state[p]["exp_avg"], path)  # what the release is for
    for key in ("exp_avg", "exp_avg_sq"):
        assert not _mapped_from(restored.state[p][key], path)
        assert torch.equal(restored.state[p][key], opt.state[p][key])
    path.unlink()
    import gc

    gc.collect()
    assert not any(str(path) in line for line in open("/proc/self/maps"))  # the file's space is free
