"""The speed model's host-side gradient accumulation (core/estimate/speed.py ``step_time``): ZeRO-2 with the
optimizer on the CPU moves each micro-batch's gradients to a host buffer and back; ZeRO-1 reduces only at
the boundary. The runs it was set from: benchmarks/results/speed-offload-accumulation-predictions-2026-12-07.txt."""
from __future__ import annotations

import pytest

from zerotui.core.estimate.speed import H200, step_time
from zerotui.core.plan.schema import Plan

from estimate_shared import SPEC_1B

PART = "gradients accumulated on the host"
TRAINABLE = SPEC_1B.params_total


def _step(**fields):
    plan = dict(model="llama-1b", method="full", precision="bf16", stage=2, offload_optimizer="cpu",
                micro_batch=8, grad_accum=2, seq_len=2048, grad_ckpt=True, kernels="none")
    return step_time(Plan(**{**plan, **fields}), SPEC_1B, TRAINABLE)


def test_zero2_offload_with_accumulation_pays_two_trips_of_its_16_bit_gradients():
    parts = _step()
    assert parts[PART] == pytest.approx(2 * 2 * TRAINABLE / H200.pcie_bytes_per_s)
    # about two trips whatever the accumulation (measured: +0.22 s at 8 x 2, +0.43 at 4 x 4 over 16 x 1)
    assert _step(micro_batch=4, grad_accum=4)[PART] == pytest.approx(parts[PART])
    # it is what makes 8 x 2 slower than 16 x 1 by more than the per-micro-batch overhead
    assert _step()["total"] - _step(micro_batch=16, grad_accum=1)["total"] > 0.9 * parts[PART]


@pytest.mark.parametrize("fields", [
    dict(micro_batch=16, grad_accum=1),   # one micro-batch a step: DeepSpeed's fast path
    dict(stage=1),                        # ZeRO-1 keeps the gradients on the GPU to the boundary
    dict(offload_optimizer="none"),       # nothing goes to the host
])
def test_no_host_accumulation_where_the_gradients_stay_on_the_gpu(fields):
    assert PART not in _step(**fields)
