"""A training config of any kind zerotui reads -> ``ImportResult``: a ds_config.json through
``import_config``, a LLaMA-Factory or axolotl YAML through its mapper, with the DeepSpeed file it names read
through ``import_config`` too (its ZeRO part; what the HF Trainer fills from the YAML comes from the YAML).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional

import yaml

from zerotui.core.deepspeed.import_config import ImportResult, import_ds_config, plan_name
from zerotui.core.deepspeed.peers.axolotl import AxolotlMapper
from zerotui.core.deepspeed.peers.llamafactory import LlamaFactoryMapper
from zerotui.core.deepspeed.peers.sniff import (AXOLOTL, DS_CONFIG, HINT, LLAMA_FACTORY, kind_of_mapping,
                                               parse_yaml, read_text, sniff)
from zerotui.core.deepspeed.read import read_ds_config
from zerotui.core.errors import ConfigImportError, PlanError
from zerotui.core.plan.schema import plan_from_dict

MAPPERS = {LLAMA_FACTORY: LlamaFactoryMapper, AXOLOTL: AxolotlMapper}
#: ds_config keys the HF Trainer fills from its TrainingArguments (the YAML) -> the YAML keys they come from.
TRAINER_FILLED = {"train_batch_size": "batch size × accumulation × GPUs",
                  "train_micro_batch_size_per_gpu": "the per-GPU batch size",
                  "gradient_accumulation_steps": "gradient_accumulation_steps", "gradient_clipping": "max_grad_norm"}
#: DeepSpeed's schedulers, which the HF Trainer runs instead of lr_scheduler_type when the file has one.
DS_SCHEDULES = {"WarmupLR": "constant", "WarmupDecayLR": "linear", "WarmupCosineLR": "cosine"}


def import_training_config(path: Path | str, overrides: Optional[dict[str, Any]] = None,
                           world_size: Optional[int] = None) -> ImportResult:
    """A ds_config.json, a LLaMA-Factory or an axolotl training YAML as a Plan; anything else is refused
    (ConfigImportError) naming what the file holds. ``overrides`` (plan fields) win over the file."""
    p = Path(path)
    kind, data = sniff(p)
    if kind == DS_CONFIG:
        cfg, _ = read_ds_config(p)
        _require_deepspeed_keys(cfg, p)
        result = import_ds_config(p, world_size, overrides)
    else:
        result = import_peer(kind, data or {}, p, overrides, world_size)
    result.source_format = kind
    return result


def peer_plan(path: Path | str, overrides: Optional[dict[str, Any]] = None) -> Optional[ImportResult]:
    """The import of a LLaMA-Factory or axolotl YAML at ``path``, or None when it is not one (a zerotui
    plan, or a file the plan reader will explain), for ``--plan FILE``."""
    p = Path(path).expanduser()
    if p.suffix.lower() == ".json":
        return None
    try:
        data = parse_yaml(read_text(p), p)
    except (ConfigImportError, yaml.YAMLError):
        return None  # the plan reader explains a missing, unreadable or malformed file in its own words
    kind = kind_of_mapping(data) if isinstance(data, dict) else None
    if kind is None:
        return None
    result = import_peer(kind, data, p, overrides)
    result.source_format = kind
    return result


def _require_deepspeed_keys(cfg: dict[str, Any], path: Path) -> None:
    from zerotui.core.deepspeed import keys as dskeys

    known = dskeys.known_top_level_keys() | set(dskeys.removed_keys())
    if not any(k in known for k in cfg):
        seen = ", ".join(list(map(str, cfg))[:6]) or "an empty object"
        raise ConfigImportError(f"{path}: not a DeepSpeed config: none of its keys ({seen}) is a DeepSpeed setting",
                                HINT)


def import_peer(kind: str, data: dict[str, Any], path: Path, overrides: Optional[dict[str, Any]] = None,
                world_size: Optional[int] = None) -> ImportResult:
    mapper = MAPPERS[kind](data, path)
    mapper.run()
    fields = {"name": plan_name(str(path)), "description": f"imported from {path.name} ({kind})", **mapper.fields}
    if mapper.ds_config is None:
        fields.update(overrides or {})
        try:
            plan = plan_from_dict(fields, str(path))
        except PlanError as err:
            raise ConfigImportError(err.message, err.hint) from None
        world = world_size or int(fields.get("gpus") or 1) * int(fields.get("nodes") or 1)
        return ImportResult(plan=plan, warnings=mapper.warnings, dropped=mapper.dropped, world_size=world)
    if isinstance(mapper.ds_config, dict):
        label, (cfg, read_warnings) = mapper.ds_key, (mapper.ds_config, [])
    else:
        label, (cfg, read_warnings) = mapper.ds_config.name, read_ds_config(mapper.ds_config)
    cfg, notes = trainer_filled(cfg, fields)
    fields.update(overrides or {})
    result = import_ds_config(cfg, world_size, fields)
    # The YAML's precision is the one in force; the file's own fp32 note would repeat the mapper's.
    ds_warnings = [w for w in result.warnings if not w.startswith("neither fp16 nor bf16 is enabled")]
    result.warnings = mapper.warnings + [f"{label}: {w}" for w in read_warnings + notes + ds_warnings]
    result.dropped = mapper.dropped + [f"{label}: {d}" for d in result.dropped]
    return result


def _is_auto(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "auto"


def _set_values(value: Any, skip: tuple[str, ...] = ()) -> list[str]:
    """The leaves of a ds_config value that are not HF's "auto" placeholder."""
    if isinstance(value, dict):
        return [f"{k}.{leaf}" if leaf else str(k) for k, v in value.items() if k not in skip
                for leaf in _set_values(v)]
    return [] if _is_auto(value) or value is None else [""]


def trainer_filled(cfg: dict[str, Any], fields: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The DeepSpeed file as the HF Trainer uses it next to the YAML: batch, clipping, optimizer and
    precision come from the YAML (the Trainer stops when an explicit value differs); "auto" ZeRO sizes are
    filled from the model, as zerotui does; a DeepSpeed scheduler replaces the YAML's schedule. ``fields``
    (the YAML's plan fields) may get the scheduler's ``lr_schedule``."""
    out, notes = copy.deepcopy(cfg), []
    for key, source in TRAINER_FILLED.items():
        if key in out and _set_values(out.pop(key)):
            notes.append(f"{key} is set here, but the HF Trainer takes it from the YAML ({source}) and stops when "
                         "the two differ; the plan uses the YAML's")
    opt = out.pop("optimizer", None)
    if isinstance(opt, dict) and str(opt.get("type", "AdamW")).lower() not in ("adam", "adamw", "auto"):
        notes.append(f"optimizer {opt.get('type')!r}: not carried over; zerotui trains with AdamW")
    elif isinstance(opt, dict) and _set_values(opt, skip=("type",)):
        notes.append("optimizer.params are set here; the plan takes learning rate, betas, eps and weight decay "
                     "from the YAML, as the HF Trainer requires them to agree")
    sched = out.pop("scheduler", None)
    if isinstance(sched, dict):
        schedule = DS_SCHEDULES.get(str(sched.get("type")))
        if schedule is None:
            notes.append(f"scheduler {sched.get('type')!r}: not carried over; the plan keeps the YAML's schedule")
        elif schedule != fields.get("lr_schedule", "cosine"):
            notes.append(f"scheduler {sched['type']} replaces the YAML's schedule in the HF Trainer, so the plan "
                         f"uses lr_schedule={schedule}")
            fields["lr_schedule"] = schedule
    precision = fields.get("precision", "fp32")
    for name, on in (("fp16", precision == "fp16"), ("bf16", precision == "bf16"), ("bfloat16", False)):
        section = out.get(name)
        if not isinstance(section, dict):
            continue
        given = section.get("enabled", False)
        if not _is_auto(given) and bool(given) != on:
            notes.append(f"{name}.enabled={given} disagrees with the YAML; the plan uses precision={precision}")
        out[name] = {**section, "enabled": on}
    if precision == "bf16" and not isinstance(out.get("bf16"), dict):
        out["bf16"] = {"enabled": True}
    if precision == "fp16" and not isinstance(out.get("fp16"), dict):
        out["fp16"] = {"enabled": True}
    if isinstance(out.get("bf16"), dict):
        out.pop("bfloat16", None)  # DeepSpeed reads 'bf16' when both are there
    zero = out.get("zero_optimization")
    if isinstance(zero, dict):
        out["zero_optimization"] = {k: v for k, v in zero.items() if not _is_auto(v)}
    return out, notes
