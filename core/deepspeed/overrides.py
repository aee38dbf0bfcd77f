"""The one check of a plan's ``ds_overrides`` that every command taking a plan runs.

``estimate`` and ``fit`` never build a ds_config, ``export`` and ``train`` do: without one shared check a
plan could get a budget from ``estimate`` and then be refused by ``export``, or be exported with a section
DeepSpeed itself refuses at ``deepspeed.initialize`` — minutes into a run. So each of them asks the same
two questions here: do the overrides touch what the Plan owns (``config.check_owned_keys``), and does
DeepSpeed's own config parser accept the merged result (``keys.deepspeed_rejects``)?

A third answer is a warning, not a refusal: DeepSpeed reads the keys it knows and ignores the rest, so a
misspelt key (``steps_per_prnt``) passes its parser and silently does nothing. ``zerotui import`` has
always said so for a copied ds_config; ``check_overrides`` returns the same verdict for overrides given
with ``--ds-overrides`` or in a plan file, for the caller to show.
"""
from __future__ import annotations

import difflib
from typing import Any

from zerotui.core.deepspeed.config import build_ds_config, check_owned_keys
from zerotui.core.errors import PlanError

#: Blocks that hold the optimizer's or the scheduler's own arguments: DeepSpeed hands them on without
#: looking them up, so its probe cannot say which are known (``betas`` would look unknown).
_FREE_FORM = frozenset({"optimizer.params", "scheduler.params"})
#: How alike a key must be to a known one to be offered as the one meant: 'steps_per_prnt' is 0.97 like
#: 'steps_per_print', while the invented 'gradient_hp_compression' is 0.65 like 'gradient_clipping',
#: which it never meant.
_CLOSE = 0.75


def check_overrides(plan: Any, world_size: int = 1, spec: Any = None) -> list[str]:
    """PlanError naming the first override that would fail; otherwise one warning per key DeepSpeed would
    ignore (empty for a plan without overrides: the generated config alone is zerotui's and is tested, so
    DeepSpeed is imported only when needed)."""
    overrides = plan.ds_overrides
    if not overrides:
        return []
    check_owned_keys(overrides)
    from zerotui.core.deepspeed.keys import deepspeed_rejects

    complaint = deepspeed_rejects(build_ds_config(plan, max(1, world_size), spec))
    if complaint:
        raise PlanError(f"ds_overrides: DeepSpeed refuses the merged ds_config ({complaint})",
                        "fix or remove that key in ds_overrides (--ds-overrides or the plan file); "
                        "the rest of the plan is fine", field="ds_overrides")
    return unknown_keys(overrides)


def unknown_keys(overrides: dict[str, Any]) -> list[str]:
    """One line per key in ``overrides`` that the installed DeepSpeed does not read, with the known key
    it most likely meant. Sections whose keys DeepSpeed cannot be asked about are not judged."""
    if not overrides:
        return []
    from zerotui.core.deepspeed.keys import known_top_level_keys

    found: list[str] = []
    _walk(overrides, "", known_top_level_keys(), found)
    if not found:
        return []
    version = _deepspeed_version()
    return [f"ds_overrides: '{path}' is not a setting DeepSpeed{version} reads, so it would be ignored "
            f"silently{meant}; fix or remove it (--ds-overrides or the plan file)" for path, meant in found]


def _walk(block: dict[str, Any], section: str, known: frozenset[str], found: list[tuple[str, str]]) -> None:
    from zerotui.core.deepspeed.keys import known_section_keys

    for key, value in block.items():
        path = f"{section}.{key}" if section else key
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=_CLOSE)
            meant = f"{section}.{close[0]}" if close and section else (close[0] if close else "")
            found.append((path, f" (did you mean '{meant}'?)" if meant else ""))
        elif isinstance(value, dict) and path not in _FREE_FORM:
            inner = known_section_keys(path)
            if inner is not None:
                _walk(value, path, inner, found)


def _deepspeed_version() -> str:
    from importlib import metadata

    try:
        return f" {metadata.version('deepspeed')}"
    except metadata.PackageNotFoundError:  # pragma: no cover - a dependency
        return ""
