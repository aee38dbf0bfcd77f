"""An existing ds_config.json (copied from an article, a forum, an HF example) -> a Plan, with a warning for
everything that does not carry over: keys DeepSpeed does not know (it ignores unknown top-level keys
silently), values that contradict each other, HF Trainer ``"auto"`` placeholders, and what was dropped.

DeepSpeed settings the Plan has no field for are kept verbatim in ``plan.ds_overrides`` when DeepSpeed
itself accepts them next to the generated config (checked with its own parser); the result lists them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from zerotui.core.deepspeed.read import read_ds_config
from zerotui.core.errors import ConfigImportError, PlanError
from zerotui.core.plan.schema import Plan, plan_from_dict

__all__ = ["ImportResult", "import_ds_config", "plan_name", "read_ds_config"]


@dataclass
class ImportResult:
    plan: Plan
    warnings: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)   # "key: why" for each setting not carried over
    kept: list[str] = field(default_factory=list)      # keys kept verbatim in plan.ds_overrides
    world_size: int = 1                                 # the world size train_batch_size was checked against
    source_format: str = "ds_config"                    # or "LLaMA-Factory" / "axolotl" (deepspeed/peers)


def plan_name(source: str) -> str:
    """A valid plan name from the file's name."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(source).stem).strip("-._") if source else ""
    return (stem or "imported")[:80]


def import_ds_config(path_or_dict: Path | str | dict[str, Any], world_size: Optional[int] = None,
                     overrides: Optional[dict[str, Any]] = None) -> ImportResult:
    """Map a ds_config onto a Plan. ``world_size`` is what ``train_batch_size`` is checked against (default:
    the overrides' gpus × nodes, else 1). ``overrides`` are plan fields that win over the file (the CLI's
    plan options: a ds_config names no model or data)."""
    overrides = dict(overrides or {})
    if isinstance(path_or_dict, dict):
        cfg, warnings, source = path_or_dict, [], ""
    else:
        source = str(path_or_dict)
        cfg, warnings = read_ds_config(path_or_dict)
    label = source or "ds_config"
    if world_size is None:
        world_size = int(overrides.get("gpus") or len(overrides.get("gpu_ids") or []) or 1) * int(overrides.get("nodes") or 1)
    from zerotui.core.deepspeed.mapping import ConfigMapper

    imp = ConfigMapper(cfg, world_size)
    imp.warnings += warnings
    imp.run()

    fields = {"name": plan_name(source), "description": f"imported from {Path(source).name}" if source else "imported"}
    fields.update(imp.fields)
    user_overrides = overrides.pop("ds_overrides", None) or {}
    fields.update(overrides)
    from zerotui.core.deepspeed.config import PLAN_OWNED_KEYS, build_ds_config, merge_overrides

    for path in PLAN_OWNED_KEYS:  # never keep what the Plan derives (the Importer maps those keys)
        node = imp.keep
        for part in path[:-1]:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(path[-1], None)
    try:
        plan = plan_from_dict({**fields, "ds_overrides": {}}, label)
        # Keep only what DeepSpeed's own parser accepts next to the generated config, section by section.
        base = build_ds_config(plan, world_size)
        for key in list(imp.keep):
            complaint = imp.dskeys.deepspeed_rejects(merge_overrides(base, {key: imp.keep[key]}))
            if complaint:
                imp.warn(f"DeepSpeed refuses the kept '{key}' section ({complaint}); dropped")
                imp.drop(key, "refused by DeepSpeed")
                del imp.keep[key]
        plan = plan.with_changes(ds_overrides=merge_overrides(imp.keep, user_overrides))
        build_ds_config(plan, world_size)  # the overrides must not touch what the Plan owns
    except PlanError as err:
        raise ConfigImportError(err.message, err.hint) from None
    return ImportResult(plan=plan, warnings=imp.warnings, dropped=imp.dropped,
                        kept=sorted(_leaf_paths(imp.keep)), world_size=world_size)


def _leaf_paths(tree: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k, v in tree.items():
        path = f"{prefix}{k}"
        out += _leaf_paths(v, path + ".") if isinstance(v, dict) and v else [path]
    return out
