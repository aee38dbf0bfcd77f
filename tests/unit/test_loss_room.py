"""The free region DeepSpeed's ZeRO-0 initialisation leaves, which the loss's blocks are served from
(core/estimate/margin.py ``loss_room``): read from 1b-full-ho47's allocator history, and what it does to
a plan's margin. The committed rows it moved are in tests/unit/test_margin.py."""
from __future__ import annotations

import pytest

from zerotui.core.estimate import gpu
from zerotui.core.estimate.job import job_for
from zerotui.core.estimate import margin
from zerotui.core.estimate.margin import shares
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
    """At 16 x 8,192 tokens one fp32 copy of the logits is 15.6 GiB, more than the 4.1 GiB region: the
    whole loss term stays. The rule is a step, not a slope (docs/estimator.md): a block fits or not."""
    job, peak = _peak(seq_len=8192)
    assert peak.margin_sources["loss room"] == 0.0
    assert peak.margin_terms["loss"] == pytest.approx(shares(True)[1] * peak.margin_sources["loss"])


def _without_room(monkeypatch, **fields):
    monkeypatch.setattr(margin, "loss_room", lambda job, lg: 0.0)
    out = _peak(**fields)[1]
    monkeypatch.undo()
    return out


def test_the_room_only_lowers_the_margin_and_never_below_zero(monkeypatch):
    """a-s0-mb4-ga4's plan: 1.0 GiB of loss holes, 4.1 GiB of room. With the room the loss term is 0, not
    negative, and the margin is lower by exactly the loss term it had without the room."""
    fields = dict(micro_batch=4, grad_accum=4, grad_ckpt=False)
    with_room, without = _peak(**fields)[1], _without_room(monkeypatch, **fields)
    assert with_room.margin_terms["loss"] == 0.0 < without.margin_terms["loss"]
    assert without.margin - with_room.margin == pytest.approx(without.margin_terms["loss"])


@pytest.mark.parametrize("micro_batch,seq_len", [(17, 1024), (21, 1024), (9, 2048), (10, 2048)])
def test_the_room_is_free_again_for_the_first_step(monkeypatch, micro_batch, seq_len):
    """The room lowers the forward/backward holes, not what the first optimizer step can use: the region
    is free again when the step runs, so whether the step's tensors fit (margin.first_step_term) is
    decided as without the room (fp16 ZeRO-0 with recompute, where counting it there would switch on a
    2 GiB first-step segment)."""
    fields = dict(precision="fp16", micro_batch=micro_batch, seq_len=seq_len)
    assert _peak(**fields)[1].margin_terms["first step"] == _without_room(monkeypatch, **fields).margin_terms["first step"]
