"""The optimizer step's own moment in the GPU estimate (core/estimate/margin.py ``step_hole`` and
``step_moment_term``) and ZeRO-1's flat gradient partition beside the weights' accumulated gradients
(core/estimate/gpu.py, the grads moment). The rows these were read from and the held-out runs that
tested them are in tests/unit/test_margin.py; here, what each rule does to a plan."""
from __future__ import annotations

import pytest

from zerotui.core.estimate import gpu
from zerotui.core.estimate.job import job_for
from zerotui.core.estimate.margin import step_hole, step_moment_term
from zerotui.core.plan.schema import Plan

from estimate_shared import DEFAULT_ALLOCATOR, GIB, SPEC_1B, box_80g

SPEC = SPEC_1B


def _job(env=None, **fields):
    plan = dict(model="llama-1b", method="full", precision="bf16", stage=1, micro_batch=8, grad_accum=1,
                seq_len=2048, grad_ckpt=True, kernels="none")
    return job_for(Plan(**{**plan, **fields}), SPEC, box_80g(), env={} if env is None else env)


def test_the_hole_is_the_16bit_weights_and_twice_them_at_zero2_with_accumulation():
    psi = _job().psit
    assert psi == pytest.approx(1.1e9, rel=0.01)
    for stage, accum, precision, want in [(0, 1, "bf16", 2), (0, 2, "fp16", 2), (1, 1, "fp16", 2), (1, 4, "bf16", 2),
                                          (2, 1, "bf16", 2), (2, 2, "bf16", 4), (2, 4, "fp16", 4)]:
        job = _job(stage=stage, grad_accum=accum, precision=precision)
        assert job.expandable
        assert step_hole(job) == pytest.approx(want * psi), (stage, accum, precision)


@pytest.mark.parametrize("fields,env", [
    (dict(stage=3), None),                                      # ZeRO-3 partitions at initialisation
    (dict(stage=2, offload_optimizer="cpu"), None),             # the step runs on the host
    (dict(method="lora", stage=2), None),                       # adapters: no flat copy of the weights
    (dict(precision="fp32", stage=1), None),                    # no 16-bit copy, not measured
    (dict(stage=1), DEFAULT_ALLOCATOR),                         # the default allocator's own terms
])
def test_no_hole_where_the_rule_was_not_measured(fields, env):
    job = _job(env, **fields)
    assert step_hole(job) == 0.0
    peak = gpu.peak(job, gpu.model_states(job))
    assert peak.margin_terms["optimizer step's moment"] == 0.0


def test_where_the_step_is_the_peak_of_allocation_its_moment_alone_sets_the_margin():
    """1b-full-ho41's plan (fp16 ZeRO-1, 8 x 2,048, recompute, no fused kernels): the step is the peak of
    allocation and the margin is the hole, though the forward/backward terms add up to more (the run
    held 2.0 GiB beyond allocated where they gave 3.8)."""
    job = _job(precision="fp16", stage=1)
    peak = gpu.peak(job, gpu.model_states(job))
    assert peak.phase == "step" and peak.moments["step"] == peak.allocated
    assert peak.margin == pytest.approx(step_hole(job))
    others = sum(v for k, v in peak.margin_terms.items() if k != "optimizer step's moment")
    assert others > step_hole(job) and peak.margin_terms["optimizer step's moment"] < 0


def test_elsewhere_the_steps_moment_only_raises_the_peak():
    job = _job(stage=2, grad_accum=2)  # hole 4 bytes a weight
    hole = step_hole(job)
    busy = {"forward": 30 * GIB, "backward": 31 * GIB, "step": 29 * GIB}
    # the backward with its terms is above the step's moment: nothing added
    assert step_moment_term(job, busy, "backward", 31 * GIB, 3 * GIB + hole) == 0.0
    # the step's moment above the backward and its terms: the difference
    assert step_moment_term(job, busy, "backward", 31 * GIB, 1 * GIB) == pytest.approx(29 * GIB + hole - 32 * GIB)
    # the step the peak of allocation: its moment alone, whatever the terms
    step_peak = {"backward": 28 * GIB, "step": 29 * GIB}
    assert step_moment_term(job, step_peak, "step", 29 * GIB, 9 * GIB) == pytest.approx(hole - 9 * GIB)
    # a plan whose backward is the peak (16 x 2,048 without recompute): no step term
    big = _job(stage=2, micro_batch=16, grad_ckpt=False)
    peak = gpu.peak(big, gpu.model_states(big))
    assert peak.phase != "step" and peak.margin_terms["optimizer step's moment"] == 0.0


def test_zero1_with_accumulation_holds_its_flat_partition_beside_the_weights_gradients():
    """1b-full-ho24's plan (bf16 ZeRO-1, 2 x 4 x 2,048, no recompute, Liger): its allocator history had
    the weights' accumulated 16-bit gradients and DeepSpeed's flat partition buffer live together, with
    every activation, 0.98 GiB above the step the estimate had as its peak."""
    job = _job(stage=1, micro_batch=2, grad_accum=4, grad_ckpt=False, kernels="auto")
    peak = gpu.peak(job, gpu.model_states(job))
    assert peak.phase == "grads"
    assert peak.parts["gradients (flat partition)"] == pytest.approx(2 * job.psit)
    assert peak.allocated == pytest.approx(23.53 * GIB, rel=0.01)  # measured 23.531 GiB
    # one micro-batch a step (nothing held from before), stage 2 (gradients go to the buffer as they
    # come) and the optimizer on the CPU (its buffer is on the host): no second copy
    for fields in (dict(grad_accum=1), dict(stage=2), dict(offload_optimizer="cpu")):
        other = _job(**{**dict(stage=1, micro_batch=2, grad_accum=4, grad_ckpt=False, kernels="auto"), **fields})
        p = gpu.peak(other, gpu.model_states(other))
        assert "gradients (flat partition)" not in p.parts, fields


def test_zero2_with_accumulation_holds_the_previous_micro_batchs_partition_beside_the_new_one():
    """1b-full-ho13's plan (bf16 ZeRO-2, 2 x 4 x 2,048, no recompute, no Liger): its allocator history had
    two flat gradient partitions live at the backward's first bucket, the one the weights' .grad still view
    and the one DeepSpeed makes afresh, 0.77 GiB above the loss's moment the estimate had as its peak."""
    base = dict(stage=2, micro_batch=2, grad_accum=4, grad_ckpt=False, kernels="none")
    job = _job(**base)
    peak = gpu.peak(job, gpu.model_states(job))
    assert peak.phase == "grads"
    assert peak.parts["gradients (previous micro-batch's partition)"] == pytest.approx(2 * job.psit)
    assert peak.allocated == pytest.approx(26.02 * GIB, rel=0.01)  # measured 26.02 GiB, three runs
    # one micro-batch a step (the last step's partition went with the step), the optimizer on the CPU (its
    # gradients go to the host), no contiguous buffer: no second partition
    for fields in (dict(grad_accum=1), dict(offload_optimizer="cpu"), dict(contiguous_gradients=False)):
        other = _job(**{**base, **fields})
        p = gpu.peak(other, gpu.model_states(other))
        assert "gradients (previous micro-batch's partition)" not in p.parts, fields
