"""ZeRO-3 adapters' loss holes are their freed 16-bit logits (core/estimate/loss_holes.py ``freed_logits``):
once per micro-batch a step, up to two for QLoRA and fp16 and one for bf16 LoRA, held as they are, in
place of a share of the fp32 loss bytes.
Where it applies and what it does to a plan's margin; the committed rows it was made from and the plans
held out from it are checked in tests/unit/test_margin.py."""
from __future__ import annotations

import dataclasses

import pytest

from zerotui.core.estimate import gpu
from zerotui.core.estimate.job import job_for
from zerotui.core.estimate.loss_holes import FREED_LOGITS, freed_logits
from zerotui.core.estimate.margin import shares
from zerotui.core.plan.schema import Plan

from estimate_shared import DEFAULT_ALLOCATOR, SPEC_1B, box_80g

TOKENS = 4 * 2048


def _peak(env=None, **fields):
    """A LoRA plan like 1b128k-lora-s3-ho96 on the 1.1B shape unless ``fields`` say otherwise: bf16
    ZeRO-3, 4 x 2,048 tokens, one micro-batch a step, recompute, expandable segments."""
    plan = dict(model="llama-1b", method="lora", precision="bf16", stage=3, micro_batch=4, grad_accum=1,
                seq_len=2048, grad_ckpt=True, kernels="none")
    job = job_for(Plan(**{**plan, **fields}), SPEC_1B, box_80g(), env={} if env is None else env)
    return job, gpu.peak(job, gpu.model_states(job))


@pytest.mark.parametrize("fields,holes", [
    (dict(), 1), (dict(method="qlora"), 1), (dict(precision="fp16"), 1),
    # bf16 LoRA holds one at any accumulation (ho98 with four micro-batches a step, ho101 with two)
    (dict(grad_accum=2), 1), (dict(grad_accum=4, grad_ckpt=False), 1),
    # QLoRA and fp16 a second, and no more: the 7B seed plans have eight micro-batches a step
    (dict(method="qlora", grad_accum=2), 2), (dict(precision="fp16", grad_accum=2), 2),
    (dict(method="qlora", precision="fp16", grad_accum=8), 2), (dict(method="qlora", grad_accum=4, grad_ckpt=False), 2),
])
def test_zero3_adapters_hold_their_16_bit_logits(fields, holes):
    job, peak = _peak(**fields)
    logits16 = 2 * TOKENS * SPEC_1B.vocab_size
    assert freed_logits(job) == holes * logits16
    assert peak.margin_sources[FREED_LOGITS] == holes * logits16
    # no share of the fp32 loss bytes beside them: the upcast, log-softmax and gradients are live at the peak
    assert peak.margin_sources["loss"] == 0.0
    assert peak.margin_terms["loss"] == pytest.approx(holes * logits16)


@pytest.mark.parametrize("fields,env", [
    (dict(stage=2), None),                    # adapters below ZeRO-3: the weighted loss share
    (dict(method="full"), None),              # ZeRO-3 full fine-tunes
    (dict(precision="fp32"), None),           # no 16-bit logits to free
    (dict(), DEFAULT_ALLOCATOR),              # the default allocator's holes were not traced
])
def test_elsewhere_the_loss_share_stays(fields, env):
    job, peak = _peak(env, **fields)
    assert freed_logits(job) == 0.0 and peak.margin_sources[FREED_LOGITS] == 0.0
    assert peak.margin_sources["loss"] > 0.0
    loss_share = shares(job.expandable)[1]
    assert peak.margin_terms["loss"] == pytest.approx(max(0.0, loss_share * peak.margin_sources["loss"]
                                                          - peak.margin_sources["loss room"]))


def test_one_micro_batch_holds_less_than_the_loss_share_gave(monkeypatch):
    """On a 128k vocabulary with one micro-batch a step the rule takes about half the loss share's bytes
    off the margin (1b128k-lora-s3-ho96: 2.10 GiB held, 4.11 from the share, 1.96 from the rule), and
    nothing but the loss term moves."""
    from zerotui.core.estimate import margin

    shape = dataclasses.replace(SPEC_1B, vocab_size=128256)
    plan = Plan(model="llama-1b", method="lora", precision="bf16", stage=3, micro_batch=4, grad_accum=1,
                seq_len=2048, grad_ckpt=True, kernels="none")
    job = job_for(plan, shape, box_80g(), env={})
    with_rule = gpu.peak(job, gpu.model_states(job))
    monkeypatch.setattr(margin, "freed_logits", lambda job: 0.0)
    share = gpu.peak(job, gpu.model_states(job))
    assert with_rule.allocated == share.allocated
    others = lambda p: {k: v for k, v in p.margin_terms.items() if k != "loss"}  # noqa: E731
    assert others(with_rule) == others(share)
    assert with_rule.margin_terms["loss"] == pytest.approx(2 * TOKENS * 128256)  # 1.96 GiB
    assert share.margin_terms["loss"] == pytest.approx(shares(True)[1] * 12 * TOKENS * 128256)  # 4.11 GiB
