"""LoRA / QLoRA adapters folded into their base, in the output dtype (never a detour through fp32 unless
the plan trained in fp32): the base is loaded straight into that dtype with ``from_pretrained`` (which
builds the model on the meta device and fills it from memory-mapped safetensors, so one copy is held),
the adapters are merged with PEFT's ``merge_and_unload`` in place.

QLoRA's base is quantised as in training (compute dtype: the run's precision) and dequantised
(transformers' ``dequantize``), so the merged model computes what the adapter model computed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from zerotui.core.errors import RunError
from zerotui.core.export.checkpoint_load import Loaded


def torch_dtype_of(name: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def _base_model(plan: Any, out_dtype: str) -> Any:
    """The base to merge into, in ``out_dtype`` (the run's precision unless asked otherwise: a 70B base
    in fp32 would need 280 GB of RAM). QLoRA's is quantised as in training (compute dtype: the run's
    precision), dequantised, then cast."""
    from transformers import AutoModelForCausalLM
    from zerotui.core.model.load import _local_folder, load_config, torch_dtype
    from zerotui.core.model.quantise import prepare_base, quantization_config

    folder = _local_folder(plan)
    source = str(folder) if folder is not None else plan.model
    config = load_config(plan)
    dtype = torch_dtype(plan.precision if plan.method == "qlora" else out_dtype)
    quantization = quantization_config(plan, dtype)
    extra: dict[str, Any] = {} if quantization is None else {"quantization_config": quantization,
                                                             "device_map": _merge_device()}
    try:
        model = AutoModelForCausalLM.from_pretrained(source, config=config, dtype=dtype,
                                                     trust_remote_code=plan.trust_remote_code, **extra)
        if quantization is not None:
            prepare_base(model)
            model = model.dequantize()
        return model.to(torch_dtype_of(out_dtype))
    except OSError as err:
        raise RunError(f"the base model {plan.model} could not be loaded to merge into "
                       f"({str(err).splitlines()[0][:160]})",
                       "the base model must be available locally or from the hub") from None


def _merge_device() -> Any:
    """bitsandbytes quantises on a GPU when there is one, else on the CPU."""
    import torch

    return {"": 0} if torch.cuda.is_available() else {"": "cpu"}


def merged_lora(plan: Any, final: Path | None, loaded: Loaded | None, dtype: str) -> Any:
    from peft import LoraConfig, PeftModel, get_peft_model

    base = _base_model(plan, dtype)
    if final is not None:
        model = PeftModel.from_pretrained(base, str(final))
    else:
        cfg = LoraConfig(r=plan.lora_r, lora_alpha=plan.lora_alpha, lora_dropout=plan.lora_dropout,
                         target_modules=list(plan.lora_targets), bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(base, cfg)
        assert loaded is not None
        state, info = loaded.state, loaded.info
        wanted = {k for k in model.state_dict() if "lora_" in k}
        got = {k: v.contiguous() for k, v in state.items() if k in wanted}  # lazy: gather only these
        if not got or len(got) != len(wanted):
            raise RunError(f"checkpoint {info.path} holds {len(got)} of the {len(wanted)} LoRA weights "  # type: ignore[union-attr]
                           "this plan's adapters need", "it was written with other lora_targets or lora_r")
        model.load_state_dict(got, strict=False)
    return model.merge_and_unload().to("cpu")
