"""Host RAM is judged against what is free now (core/estimate/budget.py host_room): a plan the machine's
total has room for, but not its free RAM, does not fit, and the budget says why."""
from __future__ import annotations

from zerotui.core.estimate.budget import estimate, host_room
from zerotui.core.estimate.recommend import why_nothing_fits
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.model.spec import _llama_family_spec
from zerotui.core.plan.schema import Plan

GIB = 2**30
ROUND = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
         "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 1000, "tie_word_embeddings": False}


def box(total_gib: float, free_gib: float) -> Hardware:
    gpu = GpuInfo(index=0, name="test GPU", total_bytes=80 * GIB, free_bytes=80 * GIB, compute_capability=(9, 0),
                  bf16=True)
    return Hardware(gpus=[gpu], ram_total_bytes=int(total_gib * GIB), ram_available_bytes=int(free_gib * GIB))


def test_the_room_is_the_free_ram_within_the_total():
    assert host_room(box(64, 60)) == 60 * GIB
    assert host_room(box(64, 0)) == 64 * GIB      # not known (stated hardware): the total
    assert host_room(Hardware()) == 0             # nothing known: no host check


def test_a_plan_that_needs_more_than_is_free_does_not_fit_and_says_why():
    spec = _llama_family_spec("round", ROUND, "test")
    plan = Plan(model="round", stage=2, offload_optimizer="cpu", kernels="none")
    need = estimate(plan, box(256, 256), spec).cpu_bytes
    total = 2 * need / GIB
    roomy = estimate(plan, box(total, total), spec)
    busy = estimate(plan, box(total, 0.5 * need / GIB), spec)  # the rest held by other programs or /dev/shm
    assert roomy.fits and not busy.fits
    assert busy.cpu_capacity == int(0.5 * need)
    assert any("judged against what is free now" in w for w in busy.warnings)
    assert "(too much)" in busy.summary()
    lines = why_nothing_fits(plan.with_changes(seq_len=128), box(total, 0.01), spec)
    assert any(line.startswith("host RAM:") and line.endswith(" free") for line in lines), lines
