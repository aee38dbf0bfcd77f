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
    nvme_bytes_per_s: float = 2.671e9  # NVMe offload's swap traffic, read and written (see nvme_bytes)
    pageable_bytes_per_s: float = 5.52e9  # offload traffic through pageable host memory (pin_memory false)


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
FIXED = ("pcie_bytes_per_s", "fp32_slowdown", "nvme_bytes_per_s", "pageable_bytes_per_s")
#: Pageable: the 1.1B full fine-tune at ZeRO-2 with Adam on the CPU (benchmarks/speed's 1b-z2-pin, one H100,
#: benchmarks/results/speed-pin-z2b-h100-2026-12-05.json) took 0.910 s a step with pinned host buffers and
#: 1.842 s with pageable ones, the same plan alternating in one command. The model put 0.973 s on the pinned
#: step; the 0.932 s more over its 6.6 GB of gradients and weights is 5.52 GB/s for the whole transfer. One
#: pair on one machine: a figure, not a fit.
#: NVMe: the one GPU run with the optimizer on NVMe (seed scenario 1b-full-nvme, the H200 machine's virtual
#: disk, benchmarks/results/nvme-gpu-2026-12-05-1.json) took 14.23 s a step, of which the model puts 1.05 s
#: on the rest; its 35.2 GB of swap traffic (nvme_bytes) in the other 13.18 s is 2.67 GB/s. One row, so a
#: figure for that disk, not a fit: an NVMe drive's own rate replaces it only in ratio.
#: Per-trainable-weight bytes a step with the optimizer on NVMe, read and written: DeepSpeed reads a
#: sub-group's fp32 weights, Adam's two moments and its fp32 gradient (16 B) and writes them back, the
#: gradient during backward (16 B). Measured on the CPU (/proc/PID/io of the 0.13B worker, 2026-12-05,
#: benchmarks/results/nvme-io-cpu-hostsnap-2026-12-05.txt): about 2.15 GB each way a step for its 134M
#: weights, 16 B read and 16 B written a weight.
NVME_OPTIMIZER_BYTES = 32.0
#: Per-swapped-weight 16-bit reads a micro-batch with the weights on NVMe (forward and backward; the same
#: 0.13B run with every weight swapped and recompute read each about twice a step more, and wrote each
#: back once after the step).
NVME_WEIGHT_READS = 2.0

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
    link = k.pcie_bytes_per_s if plan.pin_memory else k.pageable_bytes_per_s
    if plan.offload_params != "none":
        gpu += 2 * p * psi / world_size / link
    micro = (gpu ** SMOOTH + cpu ** SMOOTH) ** (1 / SMOOTH)
    parts = {"micro-batches": plan.grad_accum * micro}
    swapped = nvme_bytes(plan, psi, trainable, world_size)
    if swapped:
        parts["NVMe swap"] = swapped / k.nvme_bytes_per_s
    share = trainable / world_size
    if plan.offload_optimizer != "none":
        parts["CPU Adam"] = k.cpu_adam_per_param * share
        parts["gradients and weights over PCIe"] = (4 + p) * share / link
        if plan.stage == 2 and plan.grad_accum > 1:
            # ZeRO-2 keeps the micro-batches' 16-bit gradients in a host buffer: each micro-batch copies its
            # partition there and, after the first, back to add the next (DeepSpeed's
            # async_accumulate_grad_in_cpu_via_gpu), on the compute stream. Measured on the 1.1B shape
            # (bf16, 16 rows of 2,048 a step, recompute; speed-offload-accumulation-predictions-2026-12-07.txt)
            # it costs about two trips of the partition whatever the accumulation: +0.22 s at 8 x 2 and
            # +0.43 at 4 x 4 over 16 x 1 on an H100, +0.20 at 8 x 2 on the H200 (sweep 1); a trip per copy
            # would be 0.26 and 0.62. ZeRO-1 reduces only at the boundary: 1 x 4 cost 0.04 s more than 4 x 1
            # on the 7B-wide shape.
            parts["gradients accumulated on the host"] = 2 * p * share / link
    else:
        parts["optimizer"] = k.gpu_adam_per_param * share
    parts["total"] = sum(parts.values())
    return parts


def nvme_bytes(plan, psi: float, trainable: float, world_size: int = 1) -> float:
    """Bytes one rank reads and writes on its NVMe swap folder a step. With the weights there, DeepSpeed
    keeps up to max_in_cpu (1e9) of them in host RAM and swaps only the rest (docs/nvme_offload.md)."""
    from zerotui.core.deepspeed.config import DS_PARAM_MAX_IN_CPU

    out = 0.0
    if plan.offload_optimizer == "nvme":
        out += NVME_OPTIMIZER_BYTES * trainable / world_size
    if plan.offload_params == "nvme":
        p = 4 if plan.precision == "fp32" else 2
        swapped = max(0.0, psi / world_size - DS_PARAM_MAX_IN_CPU)
        out += p * swapped * (NVME_WEIGHT_READS * plan.grad_accum + 1)
    return out

