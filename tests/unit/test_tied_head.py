"""A tied head's gradient at ZeRO's first bucket (core/estimate/gpu.py ``peak``): Liger's fused loss makes
the head's gradient in forward, and a tied head's waits for the embedding's until backward ends. The rows
it was read from (1b128k-full-ho108, q1.5b-full-ho44, ho88) are checked in tests/unit/test_margin.py."""
from __future__ import annotations

import dataclasses

import pytest

from zerotui.core.estimate import gpu
from zerotui.core.estimate.job import job_for
from zerotui.core.plan.schema import Plan

from estimate_shared import SPEC_1B, box_80g

TERM = "tied head's gradient (until the embedding's)"
TIED = dataclasses.replace(SPEC_1B, tied_embeddings=True)


def _grads_moment(spec, **fields):
    plan = dict(model="llama-1b", method="full", precision="bf16", stage=1, micro_batch=2, grad_accum=4,
                seq_len=2048, grad_ckpt=False, kernels="auto")
    job = job_for(Plan(**{**plan, **fields}), spec, box_80g(), env={})
    peak = gpu.peak(job, gpu.model_states(job))
    return job, peak


def test_a_tied_head_adds_its_16_bit_gradient_to_the_first_bucket_moment_only():
    job, tied = _grads_moment(TIED)
    _, untied = _grads_moment(SPEC_1B)
    head = 2 * SPEC_1B.vocab_size * SPEC_1B.hidden_size
    assert job.fused_ce
    assert tied.moments["grads"] - untied.moments["grads"] == pytest.approx(head)
    # forward and backward already hold it (the fused loss keeps it); the step has it as a weight gradient
    for moment in ("forward", "backward", "step"):
        assert tied.moments[moment] == pytest.approx(untied.moments[moment])
    # two rows of 2,048 tokens, four a step: that moment is the peak, so the term is in the allocation
    assert tied.phase == "grads" and tied.parts[TERM] == pytest.approx(head)


@pytest.mark.parametrize("fields", [
    dict(kernels="none"),   # unfused: the head's gradient is made in backward, inside the loss's moment
    dict(method="lora"),    # the head is frozen
    dict(stage=0),          # no first-bucket moment
])
def test_it_is_not_counted_where_the_head_has_no_waiting_gradient(fields):
    _, tied = _grads_moment(TIED, **fields)
    _, untied = _grads_moment(SPEC_1B, **fields)
    assert tied.moments.get("grads", 0.0) == pytest.approx(untied.moments.get("grads", 0.0))
    assert TERM not in tied.parts
