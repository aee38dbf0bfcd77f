"""The free region DeepSpeed's ZeRO-0 initialisation leaves, which the loss's blocks are served from
(core/estimate/margin.py ``loss_room``): read from 1b-full-ho47's allocator history, and what it does to
a plan's margin. The committed rows it moved are in tests/unit/test_margin.py."""
from __future__ import annotations

import pytest

from zerotui.core.estimate import gpu
from zerotui.core.estimate.job import job_for
from zerotui.core.estimate.margin import loss_room
from zerotui.core.plan.schema import Plan

from estimate_shared import DEFAULT_ALLOCATOR, GIB, SPEC_1B, box_80g

SPEC = SPEC_1B


def _peak(env=None, **fields):
    """1b-full-ho47's plan unless ``fields`` say otherwise: bf16 ZeRO-0, 16 x 2,048 tokens, recompute."""
    plan = dict(model="llama-1b", method="full", precision="bf16", stage=0, micro_batch=16, grad_accum=1,
                seq_len=2048, grad_ckpt=True, kernels="none")
    job = job_for(Plan(**{**plan, **fields}), SPEC, box_80g(), env={} if env is None else env)
    return job, gpu.peak(job, gpu.model_states(job))


def test_zero0_in_16_bits_serves_the_loss_from_the_masters_zero_gradients():
    """The region is the fp32 zero gradients FP16_Optimizer gives its masters and frees (4 bytes a
    trainable weight); one 3.9 GiB fp32 copy of the logits fits in it, so the loss's holes are gone."""
    for precision in ("bf16", "fp16"):
        job, peak = _peak(precision=precision)
        assert job.expandable and peak.phase == "backward"
        assert peak.margin_sources["loss room"] == pytest.approx(4 * job.psit)
        assert peak.margin_terms["loss"] < 0.01 * GIB  # 4.10 GiB of holes less 4.10 of room
        assert peak.margin_sources["loss"] > 10 * GIB  # what the loss churns is unchanged


@pytest.mark.parametrize("fields,env", [
    (dict(stage=2), None),                       # zerotui's Adam moments take DeepSpeed's region at 1-2
    (dict(stage=1), None),
    (dict(stage=3), None),
    (dict(precision="fp32"), None),              # no FP16_Optimizer
    (dict(method="lora"), None),                 # adapters' region is far smaller than a loss block
    (dict(), DEFAULT_ALLOCATOR),                 # measured with expandable segments only
])
def test_no_room_where_the_region_is_not_there_or_too_small(fields, env):
    job, peak = _peak(env, **fields)
    assert peak.margin_sources["loss room"] == 0.0
    assert peak.margin_terms["loss"] > 0.0


def test_a_loss_block_larger_than_the_region_keeps_its_holes():
    """At 16 x 8,192 tokens one fp32 copy of the logits is 15.6 GiB, more than the 4.1 GiB region."""
    job, peak = _peak(seq_len=8192)
    lg = {"forward_peak": 0.0, "kept": 0.0}
    assert loss_room(job, lg) == 0.0
    assert peak.margin_terms["loss"] > 0.0


def test_the_room_only_lowers_the_margin_and_never_below_zero():
    """The rows' terms with and without the room: the margin drops by at most the room, and the loss
    term stays at or above 0 when the room exceeds it (a-s0-mb4-ga4: 1.0 GiB of loss holes, 4.1 of room)."""
    _, with_room = _peak(micro_batch=4, grad_accum=4, grad_ckpt=False)
    assert with_room.margin_terms["loss"] == 0.0
    assert with_room.margin_sources["loss room"] > with_room.margin_sources["loss"] * 0.35
    assert with_room.margin >= with_room.margin_terms["gradients"] > 0
