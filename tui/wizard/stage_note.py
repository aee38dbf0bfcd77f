"""The ZeRO step's note on one process, computed from the estimate rather than asserted.

With one process nothing is split between GPUs, yet the stages are not equal: stage 1 adds an fp32 master
copy, stage 3 keeps gradients only as the fp32 partition (no full buffer at the step's peak). A fixed
"sharding saves nothing" was false the moment the bar moved from 2 to 3; the numbers themselves are not.
"""
from __future__ import annotations

from typing import Any, Optional

from zerotui.core.errors import ZeroTuiError
from zerotui.core.hardware.types import Hardware
from zerotui.core.plan.schema import Plan
from zerotui.tui.wizard.budget_bar import format_bytes


def _at_stage(plan: Plan, stage: int) -> tuple[Plan, str]:
    """The plan at ``stage``, with the offload that stage cannot have turned off ("*" if it was)."""
    changes: dict[str, Any] = {"stage": stage}
    if stage < 3 and plan.offload_params != "none":
        changes["offload_params"] = "none"
    if stage == 0 and plan.offload_optimizer != "none":
        changes["offload_optimizer"] = "none"
    elif stage < 3 and plan.offload_optimizer == "nvme":  # stages 1-2 offload the optimizer to host RAM only
        changes["offload_optimizer"] = "cpu"
    return plan.with_changes(**changes), "" if len(changes) == 1 else "*"


def stage_note(plan: Plan, hw: Optional[Hardware], spec: Any = None) -> str:
    """'' unless the plan runs as one process; then each stage's need for this plan, from the estimator."""
    from zerotui.core.estimate.budget import estimate

    gpus = hw.gpu_count if hw is not None else 0
    if hw is None or plan.world_size(gpus) != 1:
        return ""
    where, attr = ("GPU", "gpu_bytes") if gpus else ("RAM", "cpu_bytes")
    parts = []
    for stage in range(4):
        try:
            at, dropped = _at_stage(plan, stage)
            need = getattr(estimate(at, hw, spec=spec), attr)
        except (ZeroTuiError, ValueError):
            continue
        parts.append(f"{stage}: {format_bytes(need)}{dropped}")
    if not parts:
        return ""
    marked = any(p.endswith("*") for p in parts)
    return (f"One process: nothing is split, but the stages keep different copies. {where} need by stage: "
            + " · ".join(parts) + (" (*: without the offload it cannot have)" if marked else ""))
