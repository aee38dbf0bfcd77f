"""Whether a preset fits this machine, in a few words for the preset picker ("fits", "needs 153.8 GiB
host RAM, 60.0 GiB free here"): a preset named for a 24 GB card may still need far more host RAM than the
machine has, and picking it only to read "does not fit" on its review wastes a trip.

The words come from the same estimator as the budget bar (``core.estimate.budget.estimate``), plus the
two things it takes as given, by the rules the launch itself applies: the GPUs the preset asks for
(``core.run.launcher.gpu_choice_problem``) and a precision this machine lacks (``precision_choices``).
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from zerotui.core.errors import ZeroTuiError
from zerotui.core.hardware.types import Hardware
from zerotui.tui.wizard.budget_bar import format_bytes


def fit_mark(plan: Any, hw: Hardware, spec: Any = None) -> str:
    """"fits", or what ``plan`` needs that ``hw`` lacks. Raises ZeroTuiError for a model that cannot be
    resolved."""
    from zerotui.core.estimate.budget import estimate
    from zerotui.core.run.launcher import gpu_choice_problem
    from zerotui.tui.wizard.precision import precision_choices

    if gpu_choice_problem(plan, hw) is not None:
        return f"needs {plan.gpus or len(plan.gpu_ids or [])} GPUs, {hw.gpu_count} here"
    why = {v: r for v, _, r in precision_choices(hw)}.get(plan.precision)
    if why:
        return f"needs {plan.precision}, which this machine lacks"
    b = estimate(plan, hw, spec)
    if b.fits:
        # with no GPU the estimator plans a CPU run: true, and worth saying (it is slow)
        return "fits" if hw.gpu_count else "fits, on the CPU (no GPU here)"
    over = [(what, need, cap) for what, need, cap in (
        ("per GPU", b.gpu_bytes, b.gpu_capacity), ("host RAM", b.cpu_bytes, b.cpu_capacity),
        ("NVMe", b.nvme_bytes, b.nvme_capacity)) if need > cap]
    if len(over) == 1:
        what, need, cap = over[0]
        # host RAM is judged against what is free now, less the system's reserve (core/estimate/budget.py host_room)
        here = (f"{format_bytes(cap)}{' usable' if what == 'host RAM' else ''} here") if cap else "none here"
        return f"needs {format_bytes(need)} {what}, {here}"
    return "needs " + ", ".join(f"{format_bytes(need)} {what}" for what, need, _ in over) if over else \
        "does not fit"


def preset_marks(names: Iterable[str], hw: Optional[Hardware]) -> dict[str, str]:
    """name -> mark for each preset (on a thread: a saved preset's model may mean reading its config)."""
    from zerotui.core.model.spec import spec_for_plan
    from zerotui.core.plan.presets import load_preset

    marks: dict[str, str] = {}
    if hw is None:
        return marks
    for name in names:
        try:
            plan = load_preset(name)
            marks[name] = fit_mark(plan, hw, spec_for_plan(plan))
        except ZeroTuiError as err:
            marks[name] = f"fit unknown: {err.message}"
    return marks
