"""Two estimator terms of 2026-12-04 (twelfth session), by hand on a round shape: an explicit attention
mask and its repeated keys and values (core/estimate/activations.py, job.attention_masked), and the host
copy a checkpoint of a ZeRO-1/2 full fine-tune makes (core/estimate/host.py, save_copy)."""
from __future__ import annotations

import pytest

from zerotui.core.estimate.budget import estimate
from zerotui.core.estimate.job import attention_masked
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.model.spec import _llama_family_spec
from zerotui.core.plan.schema import Plan

GIB = 2**30
ROUND = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
         "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 1000, "tie_word_embeddings": False}
H, HKV, LAYERS = 1024, 256, 4


def box(ram_gib: float = 256) -> Hardware:
    gpu = GpuInfo(index=0, name="test GPU", total_bytes=80 * GIB, free_bytes=80 * GIB, compute_capability=(9, 0),
                  bf16=True)
    return Hardware(gpus=[gpu], ram_total_bytes=int(ram_gib * GIB), ram_available_bytes=int(ram_gib * GIB))


def spec(model_type: str = "llama"):
    return _llama_family_spec("round", {**ROUND, "model_type": model_type}, "test")


@pytest.mark.parametrize("ckpt", [False, True])
def test_a_mask_adds_itself_once_and_repeated_keys_and_values_per_kept_layer(ckpt):
    plan = Plan(model="round", stage=2, micro_batch=4, seq_len=2048, grad_ckpt=ckpt, kernels="none")
    s = spec()
    plain = estimate(plan, box(), s, masked=False).breakdown["gpu"]
    masked = estimate(plan, box(), s, masked=True).breakdown["gpu"]
    tokens = 4 * 2048
    repeated = 2 * 2 * (H - HKV)  # bf16 keys and values at every head instead of the KV heads'
    mask = 2048                   # SDPA's bool mask, (4, 1, 2048, 2048): seq_len bytes a token
    if ckpt:  # only the layer being recomputed keeps its attention's tensors
        assert masked["activations"] - plain["activations"] == tokens * mask
        assert masked["activations (recomputed layer)"] - plain["activations (recomputed layer)"] == tokens * repeated
    else:
        assert masked["activations"] - plain["activations"] == tokens * (mask + LAYERS * repeated)


def test_who_gets_a_mask():
    s, other = spec(), spec("gpt_neox")
    assert not attention_masked(Plan(model="round", micro_batch=8), s)        # Llama padding: unmasked
    assert attention_masked(Plan(model="round", micro_batch=8, packing=True), s)  # per-document mask
    assert not attention_masked(Plan(model="round", micro_batch=8, packing=True, attention="flash"), s)
    assert attention_masked(Plan(model="round", micro_batch=2), other)       # other families keep theirs
    assert not attention_masked(Plan(model="round", micro_batch=1), other)   # one row: never padded


def test_a_checkpoint_of_a_zero2_full_fine_tune_copies_its_16_bit_weights_to_the_host():
    s = spec()
    psi = s.params_total
    off = estimate(Plan(model="round", stage=2, offload_optimizer="cpu", kernels="none"), box(), s)
    assert off.host_phase == "saving a checkpoint"
    assert off.breakdown["cpu"]["checkpoint: a GPU buffer copied whole"] == 2 * psi
    # with the optimizer on the GPU, its fp32 partition is the larger storage torch.save copies
    on = estimate(Plan(model="round", stage=1, kernels="none"), box(), s)
    assert on.breakdown["cpu"]["checkpoint: a GPU buffer copied whole"] == 4 * psi
    # adapters save only themselves; stage 3 keeps no flat buffer of the whole model
    for plan in (Plan(model="round", stage=2, method="lora", kernels="none"),
                 Plan(model="round", stage=3, offload_optimizer="cpu", kernels="none")):
        assert "checkpoint: a GPU buffer copied whole" not in estimate(plan, box(), s).breakdown["cpu"]


def test_the_save_copy_can_decide_that_host_ram_does_not_fit():
    s = spec()
    plan = Plan(model="round", stage=2, offload_optimizer="cpu", kernels="none")
    need = estimate(plan, box(), s).cpu_bytes
    without_copy = need - 2 * s.params_total
    tight = box(ram_gib=(without_copy + s.params_total) / GIB)  # room for training, not for the save
    assert not estimate(plan, tight, s).fits
