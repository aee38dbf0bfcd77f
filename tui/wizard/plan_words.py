"""The plan in plain words, for the review step: what will be trained, on what, how, and where the
memory goes. Pure functions of the Plan, the hardware and the model spec, so they are easy to test."""
from __future__ import annotations

from typing import Any, Optional

from zerotui.core.hardware.types import Hardware
from zerotui.core.plan.data_source import describe_data
from zerotui.core.plan.schema import Plan

PRECISION_WORDS = {"bf16": "bfloat16", "fp16": "float16 with dynamic loss scaling", "fp32": "float32"}
STAGE_WORDS = {
    0: "no ZeRO sharding (plain data parallel)",
    1: "ZeRO stage 1 (optimizer states sharded)",
    2: "ZeRO stage 2 (optimizer states and gradients sharded)",
    3: "ZeRO stage 3 (optimizer states, gradients and weights sharded)",
}
PLACE = {"none": "on the GPU", "cpu": "in CPU RAM", "nvme": "on NVMe"}
#: With no GPU everything "on the GPU" is in the training process's own RAM.
PLACE_NO_GPU = {"none": "in the training process's RAM", "cpu": "in CPU RAM", "nvme": "on NVMe"}


def _params(spec: Any) -> str:
    n = getattr(spec, "params_total", 0) or 0
    return f"{n / 1e9:.2f} B" if n >= 1e8 else f"{n / 1e6:.1f} M"


def plan_in_words(plan: Plan, hw: Optional[Hardware], spec: Any = None) -> list[str]:
    gpus = hw.gpu_count if hw is not None else 0
    world = plan.world_size(gpus)
    model = plan.model + (f" ({getattr(spec, 'arch', '')}, {_params(spec)} parameters)" if spec is not None else "")
    if plan.method == "qlora":
        # QLoRA was worded as plain LoRA: nothing on the review said the base is stored quantised.
        base = f"4-bit {plan.quant_type.upper()}" if plan.quant_bits == 4 else "8-bit"
        how = (f"QLoRA adapters (r={plan.lora_r}, alpha={plan.lora_alpha}) on {', '.join(plan.lora_targets)}; "
               f"the base weights stay frozen, stored in {base}")
    elif plan.uses_adapters():
        how = (f"LoRA adapters (r={plan.lora_r}, alpha={plan.lora_alpha}) on {', '.join(plan.lora_targets)}; "
               "the base weights stay frozen")
    else:
        how = "every weight is trained (full fine-tune)"
    where = (f"{world} GPU{'s' if world > 1 else ''}" + (f" on {plan.nodes} machines" if plan.nodes > 1 else "")
             if gpus else f"{world} CPU process{'es' if world > 1 else ''} (no GPU here)")
    place = PLACE if gpus else PLACE_NO_GPU
    per = "per GPU" if gpus else "per process"
    length = f"{plan.max_steps} optimizer steps" if plan.max_steps else f"{plan.epochs:g} epoch(s)"
    lines = [
        f"Fine-tune {model} on {describe_data(plan.data)} (format: {plan.data_format}).",
        f"Method: {how}.",
        f"Runs on {where} in {PRECISION_WORDS[plan.precision]}, with {STAGE_WORDS[plan.stage]}.",
        f"Optimizer states live {place[plan.offload_optimizer]}"
        + (f", weights between uses {place[plan.offload_params]}" if plan.stage == 3 else "")
        + (f" (swap folder {plan.nvme_path})" if plan.uses_nvme() else "")
        + ("; offloaded buffers are pinned" if plan.pin_memory and (plan.offload_optimizer != "none"
                                                                     or plan.offload_params != "none") else "")
        + ".",
        f"Each step: {plan.micro_batch} sequence(s) of {plan.seq_len} tokens {per} × {plan.grad_accum} "
        f"accumulation × {world} = {plan.train_batch(gpus)} sequences"
        + ("; activations are recomputed in backward (checkpointing)" if plan.grad_ckpt else "") + ".",
        f"Trains for {length} at peak learning rate {plan.lr:g} ({plan.lr_schedule} schedule, "
        f"{plan.warmup_steps} warm-up steps), clipping gradients at {plan.grad_clip:g}.",
        f"{checkpoint_words(plan)}; {'writes the final model' if plan.save_final else 'no final export'}.",
    ]
    return lines


def checkpoint_words(plan: Plan) -> str:
    """When checkpoints are written. A 0 turns that trigger off (core/plan/schema.py), so it is not said:
    "every 30 steps / 0 minutes" read as a checkpoint every instant."""
    every = ([f"{plan.save_interval} steps"] if plan.save_interval else []) + \
        ([f"{plan.save_minutes:g} minutes"] if plan.save_minutes else [])
    if not every:
        return "No interval checkpoints"
    when = " or every ".join(every) + (", whichever comes first" if len(every) > 1 else "")
    return f"Checkpoints every {when}, keeping {plan.keep_checkpoints}"


def short_description(plan: Plan, spec: Any = None) -> str:
    """One line for a preset saved without a description: '6.7B LoRA r16, bf16, ZeRO-2, 2×8×1024'
    (micro-batch × accumulation × sequence length), plus where the optimizer states are offloaded."""
    n = getattr(spec, "params_total", 0) or 0
    size = f"{round(n / 1e9, 1):g}B" if n >= 1e9 else f"{round(n / 1e6, 1):g}M" if n else plan.model
    method = {"lora": f"LoRA r{plan.lora_r}", "qlora": f"QLoRA {plan.quant_bits}-bit r{plan.lora_r}"}.get(
        plan.method, "full fine-tune")
    offload = f", optimizer on {plan.offload_optimizer.upper()}" if plan.offload_optimizer != "none" else ""
    return (f"{size} {method}, {plan.precision}, ZeRO-{plan.stage}{offload}, "
            f"{plan.micro_batch}×{plan.grad_accum}×{plan.seq_len}")
