"""Whether the plan may be launched, and if not, why, in words the review shows beside the disabled
Launch button. Two kinds of reason: ones nothing can override (an invalid answer, an unknown model, a
precision this machine cannot run, no estimate yet) and "does not fit", which "Launch anyway" may
override (the estimate can be wrong; the user may know better)."""
from __future__ import annotations

from typing import Any, Optional

from zerotui.core.hardware.types import Hardware
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.wizard.budget_bar import BudgetView, format_bytes
from zerotui.tui.wizard.state import WizardState


def launch_blockers(state: WizardState, hardware: Optional[Hardware], view: BudgetView,
                    model_error: str = "") -> tuple[list[str], list[str]]:
    """(reasons that forbid launching, reasons that only "launch anyway" may override)."""
    hard = [msg if msg.startswith(name) else f"{name}: {msg}" for name, msg in state.errors.items()]
    if hardware is None:
        hard.append("the hardware is still being detected")
    if model_error:
        hard.append(model_error)
    if hardware is not None and not state.errors:
        from zerotui.tui.wizard.precision import precision_choices
        why = {v: r for v, _, r in precision_choices(hardware)}.get(state.plan.precision)
        if why:
            hard.append(f"precision {state.plan.precision} is not available here: {why}")
    soft: list[str] = []
    if not hard:
        if view.budget is None or view.pending:
            hard.append("the memory estimate is still running")
        elif not view.budget.fits:
            soft.append("does not fit: " + (over_capacity(view.budget) or "the estimate says so") + " (Fit: ctrl+g)")
        elif planning_only(state.plan):
            hard.append(planning_only(state.plan))
    # Core's messages name CLI flags (--offload-params); the review and its toasts name the fields.
    return [in_tui_words(r) for r in hard], [in_tui_words(r) for r in soft]


def planning_only(plan: Any) -> str:
    """Why a plan on a built-in planning shape ('llama-2-7b') cannot be launched, or "". The review said
    "Ready to launch" for one and the launch then failed: the shape has no weights to train."""
    from zerotui.core.model.spec import known_models
    from zerotui.core.plan.schema import TINY_MODEL
    from zerotui.core.run.input_check import local_model_folder

    if plan.model == TINY_MODEL or plan.model not in known_models() or local_model_folder(plan) is not None:
        return ""
    return (f"'{plan.model}' is a built-in shape for planning, with no weights to train: Save or Export (e) "
            "the plan for a machine that has the model, or give a local model folder or a hub id on step 1")


def over_capacity(budget: Any) -> str:
    """'GPU needs 30.2 GiB of 24.0 GiB; CPU RAM needs ...' for each part that is over."""
    parts = (("GPU", budget.gpu_bytes, budget.gpu_capacity), ("CPU RAM", budget.cpu_bytes, budget.cpu_capacity),
             ("NVMe", budget.nvme_bytes, budget.nvme_capacity))
    return "; ".join(f"{name} needs {format_bytes(need)} of {format_bytes(cap)}"
                     for name, need, cap in parts if need > cap)
