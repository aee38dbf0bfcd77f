"""The ds_config a measured configuration trains with.

zerotui's own writer (``zerotui.core.deepspeed.config.build_ds_config``) makes it, so the harness measures
what ``zerotui train`` would launch (the config is recorded in each row).

Two harness-only changes, both memory-neutral, keep device minutes down:
- stages 1-3 without optimizer offload use PyTorch's fused AdamW (``"torch_adam": true, "fused": true``,
  read in deepspeed/runtime/engine.py ``get_optimizer_configuration``) instead of FusedAdam, which would
  cost a 30-90 s JIT build per machine. Both keep exactly exp_avg + exp_avg_sq per fp32 partition and
  make no full-size temporaries. Stage 0 keeps FusedAdam: its fp16/bf16 wrapper differs for non-fused
  optimizers (engine.py ``_configure_fp16_optimizer``).
- no learning-rate scheduler and no step printing.
"""
from __future__ import annotations

import copy
from typing import Any


def harness_ds_config(plan, spec) -> tuple[dict[str, Any], str]:
    """(ds_config, source) for one measured configuration."""
    from zerotui.core.deepspeed.config import build_ds_config

    cfg, source = copy.deepcopy(build_ds_config(plan, 1, spec)), "zerotui.core.deepspeed.config.build_ds_config"
    cfg.pop("scheduler", None)
    cfg["steps_per_print"] = 10 ** 9
    cfg["wall_clock_breakdown"] = False
    cfg.pop("tensorboard", None)
    cfg.pop("csv_monitor", None)
    cfg.pop("wandb", None)
    if plan.stage >= 1 and plan.offload_optimizer == "none":
        cfg.setdefault("optimizer", {"type": "AdamW", "params": {}})
        cfg["optimizer"].setdefault("params", {}).update(torch_adam=True, fused=True)
        cfg["zero_allow_untested_optimizer"] = True
    return cfg, source
