"""The ZeRO-1 step's fp32 copy on forward's pool (core/estimate/step_copy.py ``copy_on_forward_pool``):
where it applies, the pool it gives and how gpu.peak takes it. The committed rows it was read from (ho104,
ho105) and the rows it raises are checked in tests/unit/test_margin.py."""
from __future__ import annotations

import pytest

from zerotui.core.estimate import gpu
from zerotui.core.estimate.job import job_for
from zerotui.core.estimate.step_copy import copy_on_forward_pool
from zerotui.core.plan.schema import Plan

from estimate_shared import DEFAULT_ALLOCATOR, SPEC_1B, box_80g

TERM = "the step's copy on forward's pool"


def _peak(env=None, **fields):
    """A bf16 ZeRO-1 full fine-tune of the 1.1B shape, no recompute, one row of 2,048 tokens a micro-batch
    and sixteen a step, expandable segments, unless ``fields`` say otherwise."""
    plan = dict(model="llama-1b", method="full", precision="bf16", stage=1, micro_batch=1, grad_accum=16,
                seq_len=2048, grad_ckpt=False, kernels="auto")
    job = job_for(Plan(**{**plan, **fields}), SPEC_1B, box_80g(), env={} if env is None else env)
    return job, gpu.peak(job, gpu.model_states(job))


def test_where_forward_leaves_no_room_for_the_copy_the_pool_grows_by_it():
    job, peak = _peak()
    copy, partition, hole = 4.0 * job.psit, 2.0 * job.psit, 2.0 * job.psit
    init_pool = peak.moments["step"] - copy - partition + hole
    assert peak.moments["forward"] - init_pool < copy  # forward's overflow cannot hold the copy
    pool = copy_on_forward_pool(job, peak.moments)
    assert pool == pytest.approx(max(init_pool, peak.moments["forward"]) + partition + copy)
    # here the margin's other terms (the step's allocation and the hole) fall short of it: the term lifts the
    # estimate's pool to it, to the byte
    assert peak.margin_terms[TERM] > 0.5 * 2**30
    assert peak.allocated + peak.margin == pytest.approx(pool)


def test_where_forward_freed_room_enough_it_does_not_apply():
    # 16 rows of 2,048 tokens without recompute: forward's activations far larger than the 4.1 GiB copy
    job, peak = _peak(micro_batch=16, grad_accum=1)
    copy = 4.0 * job.psit
    init_pool = peak.moments["step"] - copy - 2.0 * job.psit + 2.0 * job.psit
    assert peak.moments["forward"] - init_pool > copy
    assert copy_on_forward_pool(job, peak.moments) == 0.0 and peak.margin_terms[TERM] == 0.0


@pytest.mark.parametrize("fields,env", [
    (dict(grad_ckpt=True), None),            # with recompute the copies found room (ho14, ho41)
    (dict(stage=2), None),                   # ZeRO-2 builds its copy otherwise; no history of it
    (dict(stage=0), None),
    (dict(offload_optimizer="cpu"), None),   # the step runs on the CPU
    (dict(method="lora"), None),             # adapters: no copy of any size
    (dict(precision="fp32"), None),          # no 16-bit weights flattened, no hole
    (dict(), DEFAULT_ALLOCATOR),             # measured with expandable segments only
])
def test_it_stays_off_where_it_was_not_measured(fields, env):
    job, peak = _peak(env, **fields)
    assert copy_on_forward_pool(job, peak.moments) == 0.0
    assert peak.margin_terms.get(TERM, 0.0) == 0.0


def test_the_guard_only_raises_the_estimate():
    job, peak = _peak()
    pool = copy_on_forward_pool(job, peak.moments)
    without = peak.allocated + peak.margin - peak.margin_terms[TERM]
    assert peak.allocated + peak.margin == pytest.approx(max(without, pool))
