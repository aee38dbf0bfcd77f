"""How long one optimizer step takes: the recommender's ranking, fitted to measured step times.

    t = ga · smoothmax(GPU work, CPU work) + t_optimizer + t_transfer

GPU work of one micro-batch is FLOPs / R: F per token is 6Ψ for a full fine-tune and 4Ψ with LoRA
(frozen weights need no weight gradient), plus attention's 6·L·s·h; checkpointing re-runs a forward
pass (``ckpt_recompute`` of 2Ψ + attention). CPU work is Python and launch overhead per layer and
micro-batch (HF modules plus DeepSpeed's per-parameter hooks): small micro-batches of a big GPU are
bound by it, which is why halving the micro-batch and doubling accumulation can cost 25% (measured).
Stage 3 adds gather and hook work (per layer and per parameter); optimizer offload runs Adam on the
CPU (per trainable parameter) and moves gradients and weights over PCIe; parameter offload moves the
16-bit weights to the GPU twice per micro-batch.

The coefficients are fitted (benchmarks/estimator/fit_speed.py, least squares on log step time) to
the step times of the H200 sweeps in benchmarks/results/estimator-2026-11-29.json, and the fit's
residuals are reported there. They describe one H200 with 16 CPU cores; on another machine the
absolute times differ, and the recommender uses only the ratios between configurations of one job.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpeedCoefficients:
    rate: float             # R: sustained model FLOP/s on the GPU (bf16)
    per_layer: float        # CPU seconds per decoder layer per micro-batch (forward + backward)
    stage3_per_tensor: float  # extra CPU seconds per parameter tensor per micro-batch under stage 3
    per_hook: float         # CPU seconds per trainable tensor per micro-batch (ZeRO's gradient hooks)
    per_adapter: float      # CPU seconds per LoRA-adapted module per micro-batch (PEFT's extra ops)
    ckpt_recompute: float   # share of a forward pass that checkpointing costs again, in time
    cpu_adam_per_param: float  # seconds per trainable parameter for DeepSpeedCPUAdam's step
    pcie_bytes_per_s: float  # host<->GPU bandwidth for offload traffic
    gpu_adam_per_param: float  # seconds per trainable parameter for the GPU optimizer step
    fp32_slowdown: float    # fp32 training relative to bf16
    eager_per_score: float  # seconds per attention score (b·heads·s²·L) with eager attention


#: Fitted by benchmarks/estimator/fit_speed.py to both H200 sweeps (47 rows); the recommender check
#: and the out-of-sample errors of a fit to sweep 1 alone are in docs/estimator.md ("Speed model").
H200 = SpeedCoefficients(rate=3.813e14, per_layer=5.025e-3, stage3_per_tensor=1.628e-3, per_hook=3.212e-4,
                         per_adapter=9.058e-4, ckpt_recompute=0.884, cpu_adam_per_param=2.221e-10,
                         pcie_bytes_per_s=2.5e10, gpu_adam_per_param=2.193e-11, fp32_slowdown=8.0,
                         eager_per_score=6.327e-11)
#: Not identifiable from the sweeps (the one fp32 row is small and CPU-bound; PCIe traffic and CPU
#: Adam both grow with the trainable parameters): fixed at leads, not fitted. fp32: H200 dense
#: bf16 vs fp32 matrix rate (datasheet, ~990 vs ~67 TFLOP/s) tempered by the non-matmul work;
#: PCIe: a Gen5 x16 link's pinned copy rate, half its 64 GB/s line rate.
FIXED = ("pcie_bytes_per_s", "fp32_slowdown")

SMOOTH = 4.0  # exponent of the smooth maximum of GPU and CPU work (overlap is good, not perfect)


def matmul_params(spec) -> int:
    """Weights used in a matrix multiply per token: all but the input embedding (a tied head counts)."""
    emb = spec.vocab_size * spec.hidden_size
    return spec.params_total if spec.tied_embeddings else spec.params_total - emb


def adapted_modules(spec, plan) -> int:
    """Linear modules that carry a LoRA adapter (0 for a full fine-tune)."""
    if not plan.uses_adapters():
        return 0
    from zerotui.core.model.spec import lora_targets_found

    return sum(c for hits in lora_targets_found(spec, plan.lora_targets).values() for _, _, c in hits)


def trainable_tensors(spec, plan) -> int:
    """Parameter tensors that get a gradient hook: every weight, or LoRA's A and B per adapted Linear."""
    if plan.uses_adapters():
        return 2 * adapted_modules(spec, plan)
    return sum(c for _, c in spec.param_shapes)


def step_time(plan, spec, trainable: int, world_size: int = 1, k: SpeedCoefficients = H200) -> dict[str, float]:
    """Seconds per optimizer step on each GPU, by part (``total`` is the sum)."""
    T = plan.micro_batch * plan.seq_len
    L, h = spec.num_layers, spec.hidden_size
    mm = matmul_params(spec)
    full = not plan.uses_adapters()
    p = 4 if plan.precision == "fp32" else 2
    psi = spec.params_total + (0 if full else trainable)
    attn = 6.0 * L * plan.seq_len * h          # QKᵀ and PV forward and backward, causal half
    flops_tok = (6.0 if full else 4.0) * mm + attn
    if plan.grad_ckpt:
        flops_tok += k.ckpt_recompute * (2.0 * mm + attn / 3)
    rate = k.rate / (k.fp32_slowdown if plan.precision == "fp32" else 1.0)
    gpu = flops_tok * T / rate
    if plan.attention == "eager":
        gpu += k.eager_per_score * plan.micro_batch * spec.num_heads * plan.seq_len ** 2 * L
    cpu = k.per_layer * L * (1.0 + (k.ckpt_recompute / 3 if plan.grad_ckpt else 0.0))
    adapters = adapted_modules(spec, plan)
    cpu += k.per_adapter * adapters
    if plan.stage >= 1:
        cpu += k.per_hook * trainable_tensors(spec, plan)
    if plan.stage == 3:
        cpu += k.stage3_per_tensor * (sum(c for _, c in spec.param_shapes) + 2 * adapters)
    if plan.offload_params != "none":
        gpu += 2 * p * psi / world_size / k.pcie_bytes_per_s
    micro = (gpu ** SMOOTH + cpu ** SMOOTH) ** (1 / SMOOTH)
    parts = {"micro-batches": plan.grad_accum * micro}
    share = trainable / world_size
    if plan.offload_optimizer != "none":
        parts["CPU Adam"] = k.cpu_adam_per_param * share
        parts["gradients and weights over PCIe"] = (4 + p) * share / k.pcie_bytes_per_s
    else:
        parts["optimizer"] = k.gpu_adam_per_param * share
    parts["total"] = sum(parts.values())
    return parts
