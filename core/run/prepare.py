"""What a run folder starts with, built and written here and nowhere else.

    plan.yaml        the frozen Plan
    ds_config.json   what DeepSpeed gets (the worker reads it and never rewrites it)
    hardware.json    what was detected at launch
    estimate.json    the memory budget the run was launched with (dashboards draw it as a reference)

``launch_files`` builds their contents; ``write_launch_files`` writes them into a run folder, each
atomically. The launch (``start``) and ``export`` (a folder for the plain ``deepspeed`` launcher) both
go through ``launch_files``, so the two cannot disagree on what a run folder holds.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from zerotui.core.atomic import atomic_write_text
from zerotui.core.deepspeed.config import build_ds_config
from zerotui.core.deepspeed.overrides import check_overrides
from zerotui.core.hardware.types import Hardware
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths

PLAN, DS_CONFIG, HARDWARE, ESTIMATE = "plan.yaml", "ds_config.json", "hardware.json", "estimate.json"


def launch_files(plan: Plan, world: int, spec: Any, root: Any, hardware: Optional[Hardware] = None,
                 budget: Any = None, plan_header: str = "") -> dict[str, str]:
    """File name -> text for a run folder at ``root`` run by ``world`` processes. ``spec`` (a ModelSpec or
    None) sizes DeepSpeed's buckets; ``hardware`` and ``budget`` are recorded when given."""
    check_overrides(plan, world, spec)  # DeepSpeed's parser too: refused here, not at initialize()
    files = {
        PLAN: plan_header + plan.to_yaml(),
        DS_CONFIG: json.dumps(build_ds_config(plan, world, spec, run_dir=root), indent=2) + "\n",
    }
    if hardware is not None:
        files[HARDWARE] = json.dumps(hardware.to_dict(), indent=2) + "\n"
    if budget is not None:
        files[ESTIMATE] = json.dumps(budget.to_dict(), indent=2) + "\n"
    return files


def write_launch_files(paths: RunPaths, files: dict[str, str]) -> None:
    """Write ``files`` into the run folder, each whole or not at all (temp file + rename)."""
    for name, text in files.items():
        atomic_write_text(paths.root / name, text)
