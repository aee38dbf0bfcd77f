"""What one checkpoint takes on disk (core/estimate/checkpoint_size.py) against real DeepSpeed checkpoints
of the tiny model on the CPU: the module's weights unless stage 3, the fp32 master unless stage 0 in fp32,
Adam's two moments, adapters alone for LoRA. The launch refuses a run whose runs folder cannot take one
(a 7B full fine-tune trained and then failed at its first checkpoint on a disk with 51 GiB free)."""
from __future__ import annotations

import pytest

from engine_runs import make_run, run_engine
from zerotui.core.estimate.checkpoint_size import checkpoint_bytes
from zerotui.core.model.spec import spec_for_plan
from zerotui.core.plan.schema import load_plan

CASES = {
    "stage0": dict(stage=0),
    "stage0-fp32": dict(stage=0, precision="fp32"),
    "stage1": dict(stage=1),
    "stage2-fp32": dict(stage=2, precision="fp32"),
    "stage3": dict(stage=3),
    "lora-stage2": dict(stage=2, method="lora"),
}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("name", list(CASES))
def test_a_checkpoint_takes_what_the_estimate_says(tmp_path, cache, name):
    paths = make_run(tmp_path / name, max_steps=2, save_interval=2, **CASES[name])
    result = run_engine(paths, cache=cache)
    assert result["state"] == "completed", result
    tags = [d for d in paths.checkpoints.iterdir() if d.is_dir()]
    assert len(tags) == 1, tags
    on_disk = sum(f.stat().st_size for f in tags[0].rglob("*") if f.is_file())
    plan = load_plan(paths.plan)
    est = checkpoint_bytes(plan, spec_for_plan(plan))
    # pickles' framing, the RNG states, the client state (plan, data order) and the scheduler add a little
    assert est <= on_disk <= est * 1.06 + 512 * 1024, (name, est, on_disk)
