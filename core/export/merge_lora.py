"""LoRA / QLoRA adapters folded into their base, in the output dtype (never a detour through fp32 unless
the plan trained in fp32): the base is loaded straight into that dtype with ``from_pretrained`` (which
builds the model on the meta device and fills it from memory-mapped safetensors, so one copy is held),
the adapters are merged with PEFT's ``merge_and_unload`` in place.

QLoRA's base is quantised as in training (compute dtype: the run's precision) and dequantised
(transformers' ``dequantize``), so the merged model computes what the adapter model computed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

from zerotui.core.errors import ModelError, RunError
from zerotui.core.export.checkpoint_load import Loaded


def torch_dtype_of(name: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]


def require_base(plan: Any, run_paths: Any) -> None:
    """ModelError unless the base the adapters fold into is a folder here that this user can read.

    Users delete a base once trained. Found only when the base loaded, that refusal came after the
    merge's first stage line (two lines for one refusal), and a folder gone altogether was called "not a
    known architecture". A hub id (the cache's business) and the built-in tiny model (rebuilt on
    demand) are left to the load."""
    from zerotui.core.model.load import WEIGHT_PATTERNS, _local_folder
    from zerotui.core.plan.schema import TINY_MODEL

    folder = None if plan.model == TINY_MODEL else _local_folder(plan)
    guess = _path_like(plan.model, run_paths) if folder is None and plan.model != TINY_MODEL else None
    if folder is None and guess is None:
        return  # a hub id: the cache's business, and the load's wording
    merged = f"a {'QLoRA' if plan.method == 'qlora' else 'LoRA'} merge folds the run's adapters into it"
    back = f"put the base model back at {folder or guess}, or point `model:` in {run_paths.plan} at a copy of it"

    def refuse(what: str, hint: str = back) -> NoReturn:
        raise ModelError(f"run {run_paths.name}'s base model {what}", hint)

    if folder is None:
        # A relative name without ./ that is not here: the load would take it for a hub id
        if os.path.lexists(guess):
            refuse(f"folder {plan.model} is not in {Path.cwd()}, which the merge reads it from ({guess} is)",
                   f"run the merge from {guess.parents[len(Path(plan.model).parts) - 1]}, or point `model:` "
                   f"in {run_paths.plan} at {guess}")
        refuse(f"folder {plan.model} is gone ({merged}; looked for at {guess})")

    try:
        os.stat(folder)
    except (FileNotFoundError, NotADirectoryError):  # a link to nothing too
        refuse(f"folder {folder} is gone ({merged})")
    except OSError as err:  # a folder above it this user may not enter
        refuse(f"folder {folder} cannot be reached ({err.strerror or err})", f"fix the permissions, or {back}")
    if not folder.is_dir():
        refuse(f"{folder} is not a folder ({merged})")
    if not os.access(folder, os.R_OK | os.X_OK):
        refuse(f"folder {folder} cannot be read by this user", f"fix its permissions, or {back}")
    config = folder / "config.json"
    if not config.is_file():
        refuse(f"folder {folder} has no config.json")
    weights = [w for pattern in WEIGHT_PATTERNS for w in folder.glob(pattern)]
    if not weights:
        refuse(f"folder {folder} has no weights (*.safetensors or *.bin)")
    unreadable = sorted({p.name for p in [config, *weights] if not os.access(p, os.R_OK)})
    if unreadable:
        refuse(f"folder {folder}: this user cannot read {', '.join(unreadable[:3])}",
               f"fix their permissions, or {back}")


def _path_like(name: str, run_paths: Any) -> Path | None:
    """Where a base named as a relative path without ./ ("models/tiny-base") would be, when that name is
    a path rather than a Hugging Face hub id (which is exactly owner/name): the launch's record of it (it
    freezes a folder it finds to its absolute path, core/run/start.py), a name of more than two parts, or
    one whose first part is a folder here, beside the run's plan.yaml or beside its runs folder (where it
    was likely planned). None for what reads as a hub id."""
    parts = Path(name).parts
    if len(parts) < 2 or Path(name).is_absolute() or name.startswith(("~", ".")):
        return None
    recorded = _launched_model(run_paths)
    if recorded is not None and recorded.is_absolute() and recorded.parts[-len(parts):] == parts:
        return recorded
    here = Path.cwd()
    if len(parts) > 2:
        return here / name
    for base in (here, run_paths.root, run_paths.root.parent.parent):
        if (base / parts[0]).is_dir():
            return base / name
    return None


def _launched_model(run_paths: Any) -> Path | None:
    """The model the run's first ``run_started`` names (the plan as launched), when its head has one."""
    from zerotui.core.events.stream import read_end

    for ev in read_end(run_paths.events, 64 << 10, tail=False):
        if ev.get("type") == "run_started":
            model = (ev.get("plan") or {}).get("model") if isinstance(ev.get("plan"), dict) else None
            return Path(model) if isinstance(model, str) and model else None
    return None


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
