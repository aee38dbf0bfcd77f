"""The shape of a plan's ``ds_overrides`` (bounded JSON, object sections), checked as the Plan is built;
whether DeepSpeed accepts the merged config is core/deepspeed/overrides.py's question."""
from __future__ import annotations

from typing import Any

from zerotui.core.safe_read import ValueProblem, check_value

#: ds_config sections DeepSpeed reads as objects (deepspeed/runtime/config.py reads each with
#: get(param_dict, key, {}) and passes it to a pydantic config class).
DS_OBJECT_SECTIONS = ("zero_optimization", "optimizer", "scheduler", "fp16", "bf16", "activation_checkpointing",
                      "aio", "tensorboard", "csv_monitor", "wandb", "flops_profiler", "comms_logger",
                      "checkpoint", "data_efficiency", "compression_training", "autotuning", "elasticity")


def check_overrides(value: dict[str, Any], max_values: int) -> dict[str, Any]:
    """``value`` if DeepSpeed can take it, else ValueError saying where and what would work."""
    # DeepSpeed unpacks these sections as keyword arguments (DeepSpeedZeroConfig(**section)): a number
    # there fails deep inside deepspeed.initialize with a TypeError, after the model has loaded.
    try:  # what reaches ds_config.json is bounded JSON: no inf, no 5,000-digit integers, no deep nests
        check_value(value, max_values=max_values)
    except ValueProblem as err:
        raise ValueError(f"ds_overrides{'.' + err.where if err.where else ''} {err.what}; {err.fix}") from None
    for key in DS_OBJECT_SECTIONS:
        section = value.get(key)
        if section is not None and not isinstance(section, dict):
            raise ValueError(f"ds_overrides.{key} must be a JSON object like {{\"key\": value}} "
                             f"(got {section!r}); use null to remove the section")
    return value
