"""The one check of a plan's ``ds_overrides`` that every command taking a plan runs.

``estimate`` and ``fit`` never build a ds_config, ``export`` and ``train`` do: without one shared check a
plan could get a budget from ``estimate`` and then be refused by ``export``, or be exported with a section
DeepSpeed itself refuses at ``deepspeed.initialize`` — minutes into a run. So each of them asks the same
two questions here: do the overrides touch what the Plan owns (``config.check_owned_keys``), and does
DeepSpeed's own config parser accept the merged result (``keys.deepspeed_rejects``)?
"""
from __future__ import annotations

from typing import Any

from zerotui.core.deepspeed.config import build_ds_config, check_owned_keys
from zerotui.core.errors import PlanError


def check_overrides(plan: Any, world_size: int = 1, spec: Any = None) -> None:
    """PlanError naming the first override that would fail; nothing to do for a plan without overrides
    (the generated config alone is zerotui's and is tested), so DeepSpeed is imported only when needed."""
    overrides = plan.ds_overrides
    if not overrides:
        return
    check_owned_keys(overrides)
    from zerotui.core.deepspeed.keys import deepspeed_rejects

    complaint = deepspeed_rejects(build_ds_config(plan, max(1, world_size), spec))
    if complaint:
        raise PlanError(f"ds_overrides: DeepSpeed refuses the merged ds_config ({complaint})",
                        "fix or remove that key in ds_overrides (--ds-overrides or the plan file); "
                        "the rest of the plan is fine", field="ds_overrides")
