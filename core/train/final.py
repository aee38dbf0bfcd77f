"""``final/``: the trained model in Hugging Face format, written when a run completes.

Full fine-tune: the 16-bit weights the engine trained (stage 3: gathered layer by layer onto rank 0 with
DeepSpeed's ``_zero3_consolidated_16bit_state_dict``), saved with ``save_pretrained`` so
``AutoModelForCausalLM.from_pretrained(final)`` loads it. LoRA: only the adapter
(``PeftModel.save_pretrained``), which ``zerotui merge`` folds into the base. The tokenizer goes with
either. The folder appears whole: it is written under a temporary name and renamed into place.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from zerotui.core.atomic import honour_umask

INFO_FILE = "zerotui.json"


def trained_state_dict(engine: Any, trainable_only: bool) -> Any:
    """The module's weights as trained, on CPU: a full dict on rank 0, None elsewhere (stage 3).

    Every rank must call this (stage 3 gathers collectively)."""
    if engine.zero_optimization_partition_weights():
        return engine._zero3_consolidated_16bit_state_dict(exclude_frozen_parameters=trainable_only)
    import torch.distributed as dist

    if dist.is_initialized() and dist.get_rank() != 0:
        return None
    module = engine.module
    if trainable_only:
        return {k: p.detach().cpu() for k, p in module.named_parameters() if p.requires_grad}
    return {k: v.detach().cpu() for k, v in module.state_dict().items()}


def write_final(engine: Any, loaded: Any, plan: Any, folder: Path, step: int, rank: int) -> Path:
    """Write ``folder`` (RUN/final) from the live engine; returns it. All ranks call, rank 0 writes."""
    state = trained_state_dict(engine, trainable_only=loaded.is_lora)
    if rank != 0:
        return folder
    tmp = Path(tempfile.mkdtemp(prefix=".final-", dir=folder.parent))
    try:
        model = engine.module
        if loaded.is_lora:
            # PEFT picks the adapter's entries out of the (trainable-only) dict itself.
            model.save_pretrained(str(tmp), state_dict=state, safe_serialization=True)
        else:
            # Tied weights appear under both names in a gathered dict; save_pretrained drops the alias.
            model.save_pretrained(str(tmp), state_dict=state, safe_serialization=True)
        loaded.tokenizer.save_pretrained(str(tmp))
        info = {"base_model": plan.model, "method": plan.method, "precision": plan.precision,
                "step": step, "time": time.time(), "stage": plan.stage, "seed": plan.seed}
        (tmp / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        # mkdtemp makes 0700 and save_pretrained writes through 0600 temporary files: give the tree what a
        # plain mkdir / open would (the user's umask decides who reads it).
        honour_umask(tmp)
        if folder.exists():
            old = folder.with_name(f".final-old-{os.getpid()}")
            os.rename(folder, old)
            os.rename(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder
