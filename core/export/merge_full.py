"""A full fine-tune's weights as a Hugging Face folder in the output dtype.

From ``final/``: loaded in the output dtype (memory-mapped safetensors, one copy) and re-saved sharded.
From a checkpoint: DeepSpeed's zero_to_fp32 in lazy mode (or the memory-mapped model-states file of
stage 0) streamed into safetensors shards, each gathered, cast and written before the next one — the
fp32 master weights, so a stopped run is usable without its GPUs. No model object is built for it,
so there is nothing in memory to compare with: verification loads the folder (core/export/merge.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from zerotui.core.errors import RunError
from zerotui.core.export.checkpoint_load import Loaded
from zerotui.core.export.merge_lora import torch_dtype_of


def _expected_names(config: Any, trust_remote_code: bool) -> tuple[set[str], set[str]]:
    """(every weight name the architecture has, the tied ones among them), from a meta-device model."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=trust_remote_code)
    tied = getattr(model, "_tied_weights_keys", None) or {}
    tied_names = set(tied.keys() if isinstance(tied, dict) else tied)
    if not getattr(config, "tie_word_embeddings", False):
        tied_names = set()
    return set(model.state_dict()), tied_names


def _checked_names(plan: Any, loaded: Loaded) -> tuple[Any, set[str], set[str]]:
    """The run's config, its weight names and the tied ones; a checkpoint lacking any weight is refused."""
    from zerotui.core.model.load import load_config

    config = load_config(plan)
    names, tied = _expected_names(config, plan.trust_remote_code)
    missing = sorted(names - set(loaded.state) - tied)
    if missing:
        raise RunError(f"checkpoint {loaded.info.path} lacks {len(missing)} weights (first: {missing[0]})",
                       "it was saved by a LoRA run or another model; check the run's plan")
    return config, names, tied


def save_model(model: Any, folder: Path, dtype: str, max_shard_size: int) -> Any:
    """Save a model held in memory; returns its probe logits (the reference for verification)."""
    from zerotui.core.export import verify

    model.to(torch_dtype_of(dtype))
    model.config.use_cache = True  # the merged model is for inference
    reference = verify.probe_logits(model.eval())
    model.save_pretrained(str(folder), safe_serialization=True, max_shard_size=max_shard_size)
    return reference


def write_full(plan: Any, final: Path | None, loaded: Loaded | None, dtype: str, folder: Path,
               max_shard_size: int) -> Any | None:
    """Write the weights into ``folder``; returns probe logits when a model was held in memory."""
    from zerotui.core.export.shards import write_shards

    if final is not None:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(str(final), dtype=torch_dtype_of(dtype))
        return save_model(model, folder, dtype, max_shard_size)
    assert loaded is not None
    config, _names, tied = _checked_names(plan, loaded)
    write_shards(loaded.state, folder, torch_dtype_of(dtype), max_shard_size, drop=frozenset(tied))
    config.dtype = torch_dtype_of(dtype)
    config.use_cache = True  # the merged model is for inference
    config.save_pretrained(str(folder))
    return None


def full_model(plan: Any, final: Path | None, loaded: Loaded | None, dtype: str) -> Any:
    """A full fine-tune's model held in memory in ``dtype`` (what `chat` and `eval` run): ``final/``
    memory-mapped, or a checkpoint's consolidated state put into a weightless model without a copy."""
    import torch
    from transformers import AutoModelForCausalLM

    if final is not None:
        return AutoModelForCausalLM.from_pretrained(str(final), dtype=torch_dtype_of(dtype))
    assert loaded is not None
    from accelerate import init_empty_weights

    config, names, _tied = _checked_names(plan, loaded)
    # Weights on the meta device (the checkpoint's take their place), buffers made for real: the ones a
    # model computes in __init__ and never saves (RoPE's inv_freq) are not in any checkpoint, and left on
    # the meta device the first forward fails ("Cannot copy out of meta tensor").
    with init_empty_weights(include_buffers=False):
        model = AutoModelForCausalLM.from_config(config, dtype=torch_dtype_of(dtype),
                                                 trust_remote_code=plan.trust_remote_code)
    want = torch_dtype_of(dtype)
    model.load_state_dict({k: v.to(want) for k, v in loaded.state.items() if k in names}, strict=False, assign=True)
    model.tie_weights()
    empty = [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.device.type == "meta"]
    if empty:
        raise RunError(f"checkpoint {loaded.info.path} left {len(empty)} tensors of the model without values "
                       f"(first: {empty[0]})", "it was saved by another model or zerotui version; pick another "
                       "checkpoint, or `zerotui merge` the run and chat with the merged folder")
    return model
