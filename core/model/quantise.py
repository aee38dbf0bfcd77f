"""QLoRA's frozen base: the weights a plan loads in 4 or 8 bits through bitsandbytes.

- 4-bit: NF4 (or FP4) blocks of 64 weights with an fp32 absmax each; with double quantisation those
  constants are themselves stored in 8 bits (Dettmers et al. 2023, "QLoRA"). The matmuls dequantise one
  weight at a time into the compute dtype, which is the plan's precision.
- The packed 4-bit data is stored in a tensor of the compute dtype (``bnb_4bit_quant_storage``), not
  uint8: ZeRO-3 shards parameters of a floating dtype, and DeepSpeed's mixed-precision cast
  (``engine._cast_module_mixed_precision``) leaves a tensor that is already of the training dtype alone,
  so the packed bytes are never converted as if they were numbers.
- 8-bit: LLM.int8 (``load_in_8bit``); its int8 weights cannot be sharded, so the Plan refuses stage 3.

What ``peft.prepare_model_for_kbit_training`` does for a plain PyTorch loop is done here, minus one step:
the base is frozen, inputs require grad when activations are checkpointed (``load.load_model``), and
checkpointing is non-reentrant. It also upcasts every non-quantised weight to fp32; under DeepSpeed that
costs 4 bytes per embedding weight for nothing — the engine casts them back to the training dtype for
stages 0-2 — so the frozen norms and embeddings stay in the training dtype, as they do for LoRA.
"""
from __future__ import annotations

from typing import Any

from zerotui.core.errors import ModelError


def quantization_config(plan: Any, dtype: Any) -> Any:
    """transformers' BitsAndBytesConfig for a QLoRA plan (None for other methods)."""
    if plan.method != "qlora":
        return None
    try:
        from transformers import BitsAndBytesConfig
        import bitsandbytes  # noqa: F401 - fail here, with a clear message, not inside from_pretrained
    except ImportError as err:
        raise ModelError(f"QLoRA needs bitsandbytes ({err})",
                         "install it (`pip install bitsandbytes`), or use --method lora") from None
    if plan.quant_bits == 8:
        return BitsAndBytesConfig(load_in_8bit=True)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=plan.quant_type,
                              bnb_4bit_use_double_quant=plan.double_quant, bnb_4bit_compute_dtype=dtype,
                              bnb_4bit_quant_storage=dtype)


def device_map(plan: Any) -> Any:
    """Where bitsandbytes quantises: this rank's GPU (or the CPU). None under ZeRO-3, which places the
    weights itself (transformers refuses a device_map with zero.Init)."""
    if plan.stage == 3 and plan.zero_init:
        return None
    import os

    import torch

    if torch.cuda.is_available():
        return {"": int(os.environ.get("LOCAL_RANK", "0") or 0)}
    return {"": "cpu"}


def prepare_base(model: Any) -> None:
    """Only adapters train: the quantised base and everything around it stay frozen.

    Also keeps bitsandbytes' 4-bit layers in their training layout on the CPU: in eval mode (zerotui's
    evaluations) they would repack their weights in place for AVX-512 BF16 inference
    (``Linear4bit.forward``, ``_convert_weight_packed_for_cpu``), which changes the weights' dtype and
    nesting under the optimizer and fails on widths that are not a multiple of its block (seen with the
    tiny model: "shape '[128, 5]' is invalid")."""
    for p in model.parameters():
        p.requires_grad_(False)
    for module in model.modules():
        if hasattr(module, "support_avx512bf16_for_cpu"):
            module.support_avx512bf16_for_cpu = False


def logical_numel(p: Any) -> int:
    """Weights a parameter stands for: a 4-bit one packs two (or, stored in 16 bits, four) per element."""
    state = getattr(p, "quant_state", None)
    shape = getattr(state, "shape", None)
    if shape is not None:
        n = 1
        for d in shape:
            n *= int(d)
        return n
    return int(getattr(p, "ds_numel", 0) or p.numel())  # stage 3 partitions leave p.numel() == 0
