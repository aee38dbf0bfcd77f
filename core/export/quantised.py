"""A merged model as a bitsandbytes 4-bit (NF4, double-quantised) folder that ``from_pretrained`` loads
back as 4-bit without any quantisation config: transformers writes the packed weights and their
quantisation state into the safetensors and the config into config.json.

bitsandbytes quantises on the CPU too (0.49+), so this works on a machine without a GPU. Verification
is twofold: the reloaded folder must compute what the model had computed right after quantising (the
save round-trip is exact), and the deviation of its logits from the 16-bit merged model is reported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from zerotui.core.export import verify


def _cpu_layout(model: Any) -> None:
    from zerotui.core.model.quantise import prepare_base

    # In eval mode bitsandbytes would repack CPU weights in place for AVX-512 inference (see
    # prepare_base): what is saved must be the portable layout.
    prepare_base(model)


def _device() -> Any:
    import torch

    return {"": 0} if torch.cuda.is_available() else {"": "cpu"}


def write_4bit(merged: Path, out: Path, dtype: Any, reference: Any | None, tolerance: float) -> dict:
    """Quantise the safetensors folder ``merged`` into ``out``; returns the verification."""
    from transformers import BitsAndBytesConfig

    cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                             bnb_4bit_compute_dtype=dtype)
    model = verify.load_folder(merged, dtype, quantization_config=cfg, device_map=_device())
    _cpu_layout(model)
    quantised = verify.probe_logits(model)
    model.save_pretrained(str(out), safe_serialization=True)
    del model
    back = verify.load_folder(out, dtype, device_map=_device())
    _cpu_layout(back)
    layers = sum(type(m).__name__ == "Linear4bit" for m in back.modules())
    verdict = verify.compare(verify.probe_logits(back), quantised, tolerance)
    del back
    verdict["linear4bit_layers"] = layers
    if layers == 0:
        verdict.update(match=False, reason="the reloaded model has no 4-bit layers")
    if reference is not None:
        verdict["max_abs_diff_vs_16bit"] = float((quantised - reference).abs().max())
    return verify.check("4-bit", verdict)
