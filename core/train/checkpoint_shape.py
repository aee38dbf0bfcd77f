"""What a checkpoint can be loaded into: the plan fields that shape its files.

DeepSpeed's ZeRO checkpoints are written per stage (stage 3 partitions differ from stage 1–2's flat
groups), a LoRA run's hold only adapters, and every tensor is named after the model. A resume after
``plan.yaml`` changed one of these failed inside DeepSpeed's load with a bare ``AssertionError`` or a
``KeyError`` on a weight's name. The fields are written beside each checkpoint (its marker file) and
compared before a resume launches; fields that change only how training goes on (learning rate, steps,
batch) are the user's to edit and are not here.
"""
from __future__ import annotations

from typing import Any

#: Not the model's path: a model folder moved and plan.yaml pointed at its new place is the same model
#: (a different architecture fails the load itself, which names the checkpoint: checkpoint.py).
SHAPE_FIELDS = ("method", "stage", "lora_r", "lora_targets", "quant_bits")


def checkpoint_shape(plan: Any) -> dict[str, Any]:
    out = {}
    for f in SHAPE_FIELDS:
        value = getattr(plan, f, None)
        out[f] = list(value) if isinstance(value, (list, tuple)) else value
    if plan.method == "full":  # adapters' settings mean nothing to a full fine-tune's files
        out.update(lora_r=None, lora_targets=None)
    if plan.method != "qlora":
        out["quant_bits"] = None
    return out


def shape_changes(saved: Any, plan: Any) -> list[str]:
    """"stage 2 → 3" for each field whose value in ``saved`` (a marker's "shape") differs from ``plan``'s;
    empty for a marker written before shapes were recorded."""
    if not isinstance(saved, dict):
        return []
    now = checkpoint_shape(plan)
    fields = SHAPE_FIELDS
    if saved.get("method") != now["method"]:  # the adapters' settings follow from the method: say only it
        fields = tuple(f for f in SHAPE_FIELDS if f not in ("lora_r", "lora_targets", "quant_bits"))
    return [f"{f} {saved[f]} → {now[f]}" for f in fields if f in saved and saved[f] != now[f]]
