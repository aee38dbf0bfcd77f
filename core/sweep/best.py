"""The end of a sweep: the best completed trial's plan saved as a preset, and the sweep's final status."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zerotui.core.errors import ZeroTuiError
from zerotui.core.plan.presets import save_preset
from zerotui.core.plan.schema import Plan
from zerotui.core.sweep.folder import SweepPaths, write_status


def save_best(paths: SweepPaths, study: Any, base: Plan, log: Callable[[str], None]) -> None:
    from optuna.trial import TrialState

    done = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    if not done:
        write_status(paths, state="completed", best=None, reason="no trial completed")
        return
    best = min(done, key=lambda t: t.value)
    values = best.user_attrs.get("values") or best.params
    plan = base.with_changes(**values, name=f"{paths.name[-70:]}-best",
                             description=f"best of sweep {paths.name}: eval loss {best.value:.4g}")
    preset = ""
    try:
        preset = str(save_preset(plan, plan.name, overwrite=True))
    except (ZeroTuiError, OSError) as err:
        log(f"the best plan could not be saved as a preset: {err}")
    write_status(paths, state="completed", best={"trial": best.number, "value": best.value, "values": values,
                                                 "run": best.user_attrs.get("run"), "preset": preset})
    log(f"best: trial {best.number}, eval loss {best.value:.4g}, {values}; preset {preset or '-'}")
