"""``zerotui merge RUN -o DIR``: a run's result as a plain Hugging Face model folder.

- LoRA runs: the adapter (from ``final/``, or the trainable weights of a checkpoint) is merged into the
  base model with PEFT's ``merge_and_unload``, in the run's precision, then saved in the chosen dtype.
- QLoRA runs: the same, into the base as the adapter saw it during training — quantised with the run's
  settings, then dequantised (transformers' ``dequantize``) — so the merged model computes what the
  adapter model computed, not what the original 16-bit weights would.
- Full fine-tunes: ``final/`` re-saved, or a checkpoint's ZeRO shards consolidated into one state dict
  with DeepSpeed's ``get_fp32_state_dict_from_zero_checkpoint`` (the zero_to_fp32 logic) — the fp32
  master weights, so a stopped run is usable without its GPUs.

The output appears whole or not at all (written to a temporary sibling, then renamed) and an existing
non-empty folder is never overwritten. The dtype defaults to the run's training precision: the
16-bit weights saved that way are exactly the ones the engine computed with.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from zerotui.core.atomic import honour_umask
from zerotui.core.errors import RunError
from zerotui.core.export.checkpoint_load import Loaded, load_checkpoint

DTYPES = ("bf16", "fp16", "fp32")


def _check_out(out_dir: Path) -> None:
    if out_dir.exists():
        if not out_dir.is_dir():
            raise RunError(f"{out_dir} exists and is a file", "give a new folder for the merged model")
        if any(out_dir.iterdir()):
            raise RunError(f"{out_dir} is not empty; merge never overwrites", "give a new or empty folder")
    parent = out_dir.parent
    if not parent.exists():
        raise RunError(f"the folder {parent} does not exist", "create it first, or choose another -o")
    if not os.access(parent, os.W_OK):
        raise RunError(f"cannot write in {parent}", "choose a folder you can write to")


def merge_run(run_paths: Any, out_dir: Path | str, checkpoint: Optional[str] = None,
              dtype: Optional[str] = None, notes: Optional[list[str]] = None) -> Path:
    """Write the merged / consolidated model of ``run_paths`` to ``out_dir``; returns ``out_dir``.

    ``checkpoint``: a tag (``step120``), a step number or ``latest``; by default ``final/`` when the run
    has one, else the newest complete checkpoint.
    """
    from transformers.utils import logging as hf_logging

    from zerotui.core.plan.schema import load_plan

    hf_logging.disable_progress_bar()
    out = Path(out_dir).expanduser().resolve()
    _check_out(out)
    if not os.path.lexists(run_paths.plan):
        raise RunError(f"{run_paths.root} has no plan.yaml: not a zerotui run folder", "`zerotui runs` lists the runs")
    from zerotui.core.run.folder import require_intact

    require_intact(run_paths, "merge")
    plan = load_plan(run_paths.plan, follow=False)
    dtype = dtype or plan.precision
    if dtype not in DTYPES:
        raise RunError(f"unknown dtype {dtype!r}", f"use one of: {', '.join(DTYPES)}")
    final = run_paths.final
    has_final = (final / "config.json").exists() or (final / "adapter_config.json").exists()
    use_final = checkpoint is None and has_final
    # weights_only loads; a damaged newest checkpoint is skipped for the previous one (notes say why)
    loaded = None if use_final else load_checkpoint(run_paths, checkpoint)
    info = loaded.info if loaded is not None else None
    if loaded is not None and notes is not None:
        notes += [f"skipped checkpoint {s}" for s in loaded.skipped]
    if not use_final and info is None:
        raise RunError(f"run {run_paths.name} has no final/ model and no complete checkpoint to merge",
                       "wait for its first checkpoint (every --save-interval steps or --save-minutes), "
                       "or `zerotui resume` it")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if plan.uses_adapters():
            model = _merged_lora(plan, final if use_final else None, loaded, dtype)
        else:
            model = _full_model(plan, final if use_final else None, loaded)
        model.to(_torch_dtype(dtype))
        model.config.use_cache = True  # the merged model is for inference
        model.save_pretrained(str(tmp), safe_serialization=True)
        _tokenizer(plan, final).save_pretrained(str(tmp))
        (tmp / "zerotui.json").write_text(json.dumps({
            "merged_from": str(run_paths.root), "source": "final" if use_final else info.tag,  # type: ignore[union-attr]
            "method": plan.method, "base_model": plan.model, "dtype": dtype, "time": time.time()}, indent=2))
        honour_umask(tmp)  # mkdtemp made it 0700; the merged model gets what the umask says
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _torch_dtype(name: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def _tokenizer(plan: Any, final: Path) -> Any:
    if (final / "tokenizer_config.json").exists():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(final))
    from zerotui.core.model.load import load_tokenizer

    return load_tokenizer(plan)


def _empty_model(plan: Any) -> Any:
    """The architecture without weights (meta device): filled from a consolidated state dict."""
    import torch
    from transformers import AutoModelForCausalLM

    from zerotui.core.model.load import load_config

    config = load_config(plan)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config, dtype=torch.float32,
                                                trust_remote_code=plan.trust_remote_code)


def _full_model(plan: Any, final: Optional[Path], loaded: Optional[Loaded]) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    if final is not None:
        return AutoModelForCausalLM.from_pretrained(str(final), dtype=torch.float32)
    assert loaded is not None
    state, info = loaded.state, loaded.info
    model = _empty_model(plan)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    missing = [k for k in missing if k not in _tied_names(model)]
    if missing:
        raise RunError(f"checkpoint {info.path} lacks {len(missing)} weights (first: {missing[0]})",  # type: ignore[union-attr]
                       "it was saved by a LoRA run or another model; check the run's plan")
    model.tie_weights()
    return model


def _tied_names(model: Any) -> set[str]:
    tied = getattr(model, "_tied_weights_keys", None) or {}
    return set(tied.keys() if isinstance(tied, dict) else tied)


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
        return model.to(_torch_dtype(out_dtype))
    except OSError as err:
        raise RunError(f"the base model {plan.model} could not be loaded to merge into "
                       f"({str(err).splitlines()[0][:160]})",
                       "the base model must be available locally or from the hub") from None


def _merge_device() -> Any:
    """bitsandbytes quantises on a GPU when there is one, else on the CPU."""
    import torch

    return {"": 0} if torch.cuda.is_available() else {"": "cpu"}


def _merged_lora(plan: Any, final: Optional[Path], loaded: Optional[Loaded], dtype: str) -> Any:
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
        got = {k: v for k, v in state.items() if k in wanted}
        if not got or len(got) != len(wanted):
            raise RunError(f"checkpoint {info.path} holds {len(got)} of the {len(wanted)} LoRA weights "  # type: ignore[union-attr]
                           "this plan's adapters need", "it was written with other lora_targets or lora_r")
        model.load_state_dict(got, strict=False)
    return model.merge_and_unload().to("cpu")
