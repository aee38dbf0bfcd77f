"""The loss leaves fewer holes where backward makes no large gradient store (core/estimate/loss_holes.py
``loss_hole_weight``, calibration.py's EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT): adapters, and full
fine-tunes whose offloaded optimizer takes each gradient off the GPU. Where it applies and what it
changes in a plan's margin. The committed rows it was chosen on are checked in tests/unit/test_margin.py
(every one within [-3%, +5%])."""
from __future__ import annotations

import pytest

from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate import gpu
from zerotui.core.estimate.job import job_for
from zerotui.core.estimate.loss_holes import loss_hole_weight
from zerotui.core.estimate.margin import shares
from zerotui.core.plan.schema import Plan

from estimate_shared import DEFAULT_ALLOCATOR, SPEC_1B, box_80g


def _peak(env=None, **fields):
    """A LoRA plan like 1b128k-lora-ho53 on the 1.1B shape unless ``fields`` say otherwise: bf16 ZeRO-2,
    8 x 1,024 tokens, no recompute, expandable segments (zerotui's setting)."""
    plan = dict(model="llama-1b", method="lora", precision="bf16", stage=2, micro_batch=8, grad_accum=1,
                seq_len=1024, grad_ckpt=False, kernels="none")
    job = job_for(Plan(**{**plan, **fields}), SPEC_1B, box_80g(), env={} if env is None else env)
    return job, gpu.peak(job, gpu.model_states(job))


@pytest.mark.parametrize("fields", [
    dict(), dict(stage=0), dict(stage=1), dict(method="qlora"), dict(grad_ckpt=True),
    # full fine-tunes whose gradients DeepSpeed copies to the host as backward reduces them
    dict(method="full", offload_optimizer="cpu"),
    dict(method="full", stage=1, offload_optimizer="cpu"),  # one micro-batch a step, overlap_comm
])
def test_plans_without_a_gradient_store_count_a_share_of_the_loss_bytes(fields):
    job, peak = _peak(**fields)
    assert loss_hole_weight(job) == cal.EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT < 1
    logits = 8 * 1024 * SPEC_1B.vocab_size
    # the unfused loss churns 12 bytes a logit (activations.logits_bytes); the weight scales what counts
    assert peak.margin_sources["loss"] == pytest.approx(12 * logits * cal.EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT)
    assert peak.margin_terms["loss"] == pytest.approx(shares(True)[1] * peak.margin_sources["loss"])


@pytest.mark.parametrize("fields,env", [
    (dict(method="full"), None),          # full fine-tunes: the rows the share was fitted on
    (dict(method="full", offload_optimizer="cpu", stage=1, grad_accum=2), None),  # ZeRO-1 accumulates them
    (dict(method="full", offload_optimizer="cpu", stage=1, overlap_comm=False), None),  # reduced after backward
    (dict(stage=3, precision="fp32"), None),  # ZeRO-3 adapters in fp32 (in 16 bits: test_freed_logits.py)
    (dict(), DEFAULT_ALLOCATOR),          # the default allocator's rows were not looked at
])
def test_elsewhere_the_loss_counts_whole(fields, env):
    job, peak = _peak(env, **fields)
    assert loss_hole_weight(job) == 1.0
    assert peak.margin_sources["loss"] == pytest.approx(12 * 8 * 1024 * SPEC_1B.vocab_size)


def test_the_weight_lowers_the_estimate_by_the_loss_terms_difference_only(monkeypatch):
    """Nothing but the loss term moves: the allocation and the other terms are the full weight's."""
    job, with_weight = _peak()
    cal_weight = cal.EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT
    monkeypatch.setattr(cal, "EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT", 1.0)
    _, whole = _peak()
    assert with_weight.allocated == whole.allocated
    others = lambda p: {k: v for k, v in p.margin_terms.items() if k != "loss"}  # noqa: E731
    assert others(with_weight) == others(whole)
    drop = whole.margin - with_weight.margin
    assert drop == pytest.approx(whole.margin_terms["loss"] * (1 - cal_weight))
    assert drop > 0.3 * 2**30  # 0.35 x 12 bytes x 8,192 x 32,000 logits x (1 - 0.7): 0.31 GiB
