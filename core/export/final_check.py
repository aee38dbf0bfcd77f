"""Whether a run's ``final/`` folder can be merged as it stands, checked before anything is loaded.

``final/`` is written once, at the end of a run, but it is the user's folder afterwards: an adapter file
deleted, cut short by a full disk or a copy, replaced by a link, or an ``adapter_config.json`` edited by
hand all reached PEFT or safetensors and came back as a traceback (a PEFT 'Repo id' error for a missing
file; an allocation of 512 GB for a rank of 10^9). Each is named here instead, and the merge can go on
from the run's newest complete checkpoint, which holds the same weights.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from zerotui.core.safe_read import MODEL_CONFIG_BYTES, describe, load_json, open_regular, read_text


def final_problem(final: Path, plan: Any) -> str:
    """What is wrong with ``final/`` for this run's plan, in words that follow "final/"; '' when nothing."""
    adapters = plan.uses_adapters()
    name = "adapter_config.json" if adapters else "config.json"
    try:
        config = load_json(read_text(final / name, MODEL_CONFIG_BYTES, follow=False))
    except (OSError, UnicodeDecodeError) as err:
        return f"{name}: {describe(err)}"
    except ValueError:
        return f"{name} is not valid JSON"
    if not isinstance(config, dict):
        return f"{name} is not a JSON object"
    if adapters:
        if str(config.get("peft_type", "")).upper() != "LORA":
            return f"{name} names no LoRA adapter (peft_type {config.get('peft_type')!r})"
        if config.get("r") != plan.lora_r:
            return f"{name} says rank {config.get('r')!r} where the run trained rank {plan.lora_r}"
        weights = [final / "adapter_model.safetensors"]
    else:
        weights = sorted(final.glob("*.safetensors"))
        if not weights:
            return " holds no .safetensors weights"
    for path in weights:
        problem = _safetensors_problem(path)
        if problem:
            return problem
    return ""


def _safetensors_problem(path: Path) -> str:
    """'' when ``path`` is the folder's own regular file and its header describes a file of its size."""
    try:
        os.close(open_regular(path, follow=False))
    except OSError as err:
        return f"{path.name}: {describe(err)}"
    try:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as fh:
            fh.keys()
    except Exception as err:  # noqa: BLE001 - safetensors raises its own SafetensorError, not OSError
        return f"{path.name} is damaged ({str(err).splitlines()[0][:120]})"
    return ""
