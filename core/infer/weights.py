"""A run's trained model, loaded for generation on this machine: ``final/`` or one complete checkpoint.

- Full fine-tunes: ``final/`` (the engine's 16-bit weights), or a checkpoint consolidated to its fp32
  masters, both through merge's loaders.
- LoRA and QLoRA: the base plus the adapter with PEFT, unmerged. QLoRA's base is quantised by
  bitsandbytes with the run's settings, so answers come from the model the adapter was trained
  against (``zerotui merge`` instead dequantises, for a plain 16-bit folder).

Checkpoints are read ``weights_only`` (``export/checkpoint_load.py``); a damaged newest one is passed over
for the previous complete one and the caller is told why.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from zerotui.core.errors import RunError
from zerotui.core.export.checkpoint_load import Loaded, load_checkpoint
from zerotui.core.export.merge import run_tokenizer
from zerotui.core.export.final_check import final_problem
from zerotui.core.export.merge_full import full_model
from zerotui.core.run.folder import RunPaths, require_intact
from zerotui.core.run.settled import LIVE_STATES
from zerotui.core.train.checkpoint import list_checkpoints


@dataclass
class RunModel:
    model: Any              # eval mode, on the device it runs on
    tokenizer: Any
    plan: Any
    source: str             # "final" or a checkpoint tag
    step: int | None     # the optimizer step the weights are from, when known
    skipped: list[str] = field(default_factory=list)  # passed over, with why: "final/: …", "checkpoint step10: …"


def has_final(paths: RunPaths) -> bool:
    final = paths.final
    return (final / "config.json").is_file() or (final / "adapter_config.json").is_file()


def what_exists(paths: RunPaths) -> str:
    """The run's weights in words, for messages that say what could be used instead."""
    every = list_checkpoints(paths.checkpoints)
    done = [c.tag for c in every if c.complete]
    torn = [c.tag for c in every if not c.complete]
    parts = ["final/" if has_final(paths) else "no final/"]
    parts.append(f"complete checkpoints: {', '.join(done)}" if done else "no complete checkpoint")
    if torn:
        parts.append(f"incomplete: {', '.join(torn)}")
    return "; ".join(parts)


def chat_refusal(state: str, name: str) -> str | None:
    """Why a UI will not load a run's model now, or None when it may.

    A run still training is refused rather than served from its newest checkpoint: a second copy of the
    model loaded beside the worker takes GPU memory (or, with CPU offload, host RAM) that the training
    was sized to use, and an out-of-memory there ends a run that may have days to go. `zerotui chat
    --checkpoint latest` is still there for someone who has checked the memory and means it."""
    if state in LIVE_STATES:
        return (f"run {name} is still training ({state}): its weights are loaded for chat once it is over "
                f"(a model beside the worker would take memory the training needs; `zerotui chat {name} "
                "--checkpoint latest` loads one anyway)")
    return None


def weight_choices(paths: RunPaths) -> list[str]:
    """What a picker offers, the default first: ``final`` when there is one, then every complete
    checkpoint's tag, newest first (``load_run_model``'s order; torn ones cannot be loaded)."""
    done = [c.tag for c in reversed(list_checkpoints(paths.checkpoints)) if c.complete]
    return (["final"] if has_final(paths) else []) + done


def load_run_model(paths: RunPaths, checkpoint: str | None = None, doing: str = "load",
                   building: Callable[[], None] | None = None) -> RunModel:
    """The model of ``paths`` ready for ``generate``: ``final/`` by default, else the newest complete
    checkpoint that reads; ``checkpoint`` (a tag, a step, ``latest`` or ``final``) picks one. ``building``
    is called once the weights to use are settled, before the model is built from them: a caller's
    progress line comes after every refusal of the request, which stays one line."""
    from transformers.utils import logging as hf_logging
    from zerotui.core.plan.schema import load_plan

    hf_logging.disable_progress_bar()
    if not os.path.lexists(paths.plan):
        raise RunError(f"{paths.root} has no plan.yaml: not a zerotui run folder", "`zerotui runs` lists the runs")
    require_intact(paths, doing)
    plan = load_plan(paths.plan, follow=False)
    use_final = checkpoint in (None, "final") and has_final(paths)
    if checkpoint == "final" and not use_final:
        raise RunError(f"run {paths.name} has no final/ ({what_exists(paths)})", "pick a checkpoint instead")
    passed_over = []
    damaged = final_problem(paths.final, plan) if use_final else ""
    if damaged:  # as merge does: the newest complete checkpoint holds the same weights
        if checkpoint == "final" or not any(c.complete for c in list_checkpoints(paths.checkpoints)):
            raise RunError(f"run {paths.name}: final/{damaged}",
                           "pick a checkpoint (--checkpoint latest), or restore final/ from a copy"
                           if checkpoint == "final" else "restore final/ from a copy, or train the run again")
        use_final = False
        passed_over.append(f"final/: {damaged.lstrip()}")
    loaded = None if use_final else load_checkpoint(paths, checkpoint)
    if not use_final and loaded is None:
        raise RunError(f"run {paths.name} has no weights to {doing} ({what_exists(paths)})",
                       "wait for its first checkpoint, `zerotui resume` it to write one, or give a run that "
                       "completed (`zerotui runs`)")
    final = paths.final if use_final else None
    if building is not None:
        building()
    if plan.uses_adapters():
        model = _adapted(plan, final, loaded)
    else:
        model = full_model(plan, final, loaded, plan.precision)
    model.eval()
    model.config.use_cache = True  # training turned the KV cache off; generation wants it
    tokenizer = run_tokenizer(plan, paths.final)
    source = "final" if use_final else loaded.info.tag  # type: ignore[union-attr]
    step = _final_step(paths) if use_final else loaded.info.step  # type: ignore[union-attr]
    passed_over += [f"checkpoint {s}" for s in loaded.skipped] if loaded else []
    return RunModel(model, tokenizer, plan, source, step, passed_over)


def _dtype(plan: Any) -> Any:
    from zerotui.core.model.load import torch_dtype

    return torch_dtype(plan.precision)


def _final_step(paths: RunPaths) -> int | None:
    try:
        step = json.loads((paths.final / "zerotui.json").read_text(encoding="utf-8")).get("step")
    except (OSError, ValueError, AttributeError):
        return None
    return step if isinstance(step, int) else None


def _base(plan: Any) -> Any:
    """The frozen base as training saw it: the run's precision; QLoRA's quantised with the run's settings
    (on this machine's GPU, else the CPU, where bitsandbytes also runs)."""
    import torch
    from transformers import AutoModelForCausalLM
    from zerotui.core.model.load import _local_folder, load_config
    from zerotui.core.model.quantise import prepare_base, quantization_config

    folder = _local_folder(plan)
    source = str(folder) if folder is not None else plan.model
    dtype = _dtype(plan)
    quantization = quantization_config(plan, dtype)
    extra: dict[str, Any] = {}
    if quantization is not None:
        extra = {"quantization_config": quantization, "device_map": {"": 0 if torch.cuda.is_available() else "cpu"}}
    try:
        model = AutoModelForCausalLM.from_pretrained(source, config=load_config(plan), dtype=dtype,
                                                     trust_remote_code=plan.trust_remote_code, **extra)
    except OSError as err:
        raise RunError(f"the base model {plan.model} could not be loaded ({str(err).splitlines()[0][:160]})",
                       "the base model must be available locally or from the hub") from None
    if quantization is not None:
        prepare_base(model)  # keeps bitsandbytes' CPU layers in the layout the adapter was trained on
    return model


def _adapted(plan: Any, final: Path | None, loaded: Loaded | None) -> Any:
    from peft import LoraConfig, PeftModel, get_peft_model

    base = _base(plan)
    if final is not None:
        return PeftModel.from_pretrained(base, str(final))
    assert loaded is not None
    cfg = LoraConfig(r=plan.lora_r, lora_alpha=plan.lora_alpha, lora_dropout=plan.lora_dropout,
                     target_modules=list(plan.lora_targets), bias="none", task_type="CAUSAL_LM")
    model = get_peft_model(base, cfg, autocast_adapter_dtype=False)
    wanted = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    got = {k: v.to(wanted[k].dtype) for k, v in loaded.state.items() if k in wanted}
    if len(got) != len(wanted):
        raise RunError(f"checkpoint {loaded.info.tag} holds {len(got)} of the {len(wanted)} LoRA weights the "
                       "run's plan needs", "it was written with other lora_targets or lora_r; pick another")
    model.load_state_dict(got, strict=False)
    return model
