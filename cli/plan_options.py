"""PLAN OPTIONS: one command-line option per Plan field, generated from the Plan itself.

``--micro-batch 4`` sets ``micro_batch``; booleans get ``--x/--no-x``; lists take commas
(``--lora-targets q_proj,v_proj``). A plan starts from ``--preset NAME`` or ``--plan FILE`` (or the
defaults) and the options given override it. Only options actually given are applied, so a preset's
values survive unless overridden.
"""
from __future__ import annotations

import argparse
import typing
from pathlib import Path
from typing import Any, Optional

from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan, plan_from_dict

# Fields that are not useful as flags (nested expert data has its own syntax below).
_SKIP = {"ds_overrides", "description"}
# Byte sizes typed as people write them (24GiB); the Plan turns them into bytes.
_SIZES = {"gpu_mem_cap"}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _unwrap_optional(tp: Any) -> Any:
    if typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _comma_list(item_type: Any):
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        try:
            return [item_type(t) for t in items]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {item_type.__name__} values, got {text!r}")
    return parse


def _json_object(text: str) -> dict:
    from zerotui.core.safe_read import ValueProblem, load_json

    try:  # bounded like a ds_config file: nesting, finite numbers, integer sizes
        value = load_json(text)
    except ValueProblem as err:
        raise argparse.ArgumentTypeError(f"{err.where + ': ' if err.where else ''}{err.what}; {err.fix}")
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({getattr(err, 'msg', err)})")
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object like '{\"zero_optimization\": {...}}'")
    return value


def add_plan_options(parser: argparse.ArgumentParser, with_source: bool = True) -> None:
    """Add --preset/--plan and one option per Plan field (all defaulting to 'not given')."""
    if with_source:
        src = parser.add_argument_group("plan source")
        src.add_argument("--preset", dest="plan_preset", metavar="NAME",
                         help="start from a built-in or saved preset (`zerotui presets` lists them)")
        src.add_argument("--plan", dest="plan_file", metavar="FILE", type=Path,
                         help="start from a plan .yaml file, or a LLaMA-Factory / axolotl training YAML")
    grp = parser.add_argument_group("plan options (override the preset or plan file)")
    for name, info in Plan.model_fields.items():
        if name in _SKIP:
            continue
        public = info.alias or name
        flag = _flag(public)
        dest = f"plan__{name}"
        help_ = (info.description or "").replace("%", "%%")  # argparse formats help with %
        tp = _unwrap_optional(info.annotation)
        origin = typing.get_origin(tp)
        kwargs: dict[str, Any] = {"dest": dest, "default": argparse.SUPPRESS, "help": help_}
        if tp is bool:
            grp.add_argument(flag, action=argparse.BooleanOptionalAction, **kwargs)
            continue
        if name in _SIZES:
            kwargs["type"] = str
            kwargs["metavar"] = "SIZE"
        elif origin is typing.Literal:
            choices = list(typing.get_args(tp))
            kwargs["choices"] = choices
            kwargs["metavar"] = "|".join(str(c) for c in choices)
            if all(isinstance(c, int) for c in choices):
                kwargs["type"] = int
        elif origin is list:
            (item,) = typing.get_args(tp)
            kwargs["type"] = _comma_list(item)
            kwargs["metavar"] = "A,B,..."
        elif tp in (int, float):
            kwargs["type"] = tp
            kwargs["metavar"] = "N" if tp is int else "X"
        elif tp is Path:
            kwargs["type"] = str  # the Plan makes the Path, after refusing an empty one ("" is ".")
            kwargs["metavar"] = "PATH"
        else:
            kwargs["type"] = str
            kwargs["metavar"] = name.upper()
        if name == "stage":
            kwargs["choices"] = [0, 1, 2, 3]
            kwargs["metavar"] = "0|1|2|3"
        grp.add_argument(flag, **kwargs)
    grp.add_argument("--ds-overrides", dest="plan__ds_overrides", type=_json_object, default=argparse.SUPPRESS,
                     metavar="JSON", help="JSON object merged last into the generated ds_config.json")


def plan_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The plan fields given on the command line, by their file names."""
    out = {}
    for key, value in vars(args).items():
        if key.startswith("plan__"):
            name = key[len("plan__"):]
            info = Plan.model_fields[name]
            out[info.alias or name] = value
    return out


def plan_from_args(args: argparse.Namespace, positional: Optional[str] = None) -> Plan:
    """Build the Plan: preset / plan file / positional PRESET|PLAN.yaml, then the options on top."""
    from zerotui.core.plan.presets import load_preset

    base: Optional[Plan] = None
    preset = getattr(args, "plan_preset", None)
    plan_file = getattr(args, "plan_file", None)
    # `zerotui train ""` (an unset shell variable) names nothing: refuse it rather than launch defaults.
    for what, value in (("PRESET|PLAN.yaml", positional), ("--preset", preset), ("--plan", plan_file)):
        if value is not None and not str(value).strip():
            raise PlanError(f"{what} is empty: it names no preset or plan file",
                            "give a preset name (`zerotui presets` lists them) or the path of a plan .yaml")
    given = [s for s in (preset, plan_file, positional) if s]
    if len(given) > 1:
        raise PlanError("give one of --preset, --plan or a PRESET|PLAN.yaml argument, not several",
                        "pick one starting point; options then override it")
    source = ""
    if preset:
        base, source = load_preset(preset), f"preset {preset}"
    elif plan_file:
        base, source = _plan_file(plan_file), str(plan_file)
    elif positional:
        base, source = _plan_file(positional), positional
    data = base.to_dict() if base else {}
    given_options = plan_overrides(args)
    data.update(given_options)
    plan = plan_from_dict(data, f"{source} + command-line options" if source else "command-line options")
    import sys

    start = str(preset or positional or "")
    if base is not None and start and "/" not in start and not start.endswith((".yaml", ".yml")):
        from zerotui.core.plan.presets import hidden_note

        # A saved preset named like a built-in one is never loaded by that name: say so where it is used.
        note = hidden_note(start)
        if note:
            print(f"note: {note}", file=sys.stderr)

    ignored = sorted(k for k in given_options if k.startswith(("lora_", "quant_", "double_quant")))
    if ignored and not plan.uses_adapters():
        # Not an error (a preset may be switched to full on purpose), but never silently dropped.
        flags = ", ".join("--" + k.replace("_", "-") for k in ignored)
        print(f"warning: {flags} ignored: LoRA options apply to --method lora or qlora, and this plan is "
              f"--method {plan.method}", file=sys.stderr)
    if plan.ds_overrides:
        # Here, once for every command that takes a plan (train, estimate, export, fit, sweep): DeepSpeed
        # ignores keys it does not know, so a typo would otherwise pass every check and do nothing. A
        # refused override raises here, before any warning about it. On stderr: --json keeps stdout.
        from zerotui.core.deepspeed.overrides import check_overrides

        for line in check_overrides(plan):
            print(f"warning: {line}", file=sys.stderr)
    return plan


def warn_unusable_nvme(plan: Plan) -> None:
    """For estimate and export: an NVMe folder this machine cannot use is a warning, not a refusal (the plan
    may be for another machine; `train` refuses it), on stderr like the plan's other warnings."""
    import sys

    from zerotui.core.run.preflight import nvme_path_warning

    line = nvme_path_warning(plan)
    if line:
        print(f"warning: {line}", file=sys.stderr)


def _plan_file(name_or_path: "str | Path") -> Plan:
    """A zerotui plan or preset, or a LLaMA-Factory / axolotl YAML imported on the fly (its warnings on
    stderr, like `zerotui import`; docs/peer_configs.md)."""
    import sys

    from zerotui.core.deepspeed.peers import peer_plan
    from zerotui.core.plan.presets import check_bounded, load_preset

    text = str(name_or_path)
    # A bare name is a preset (load_preset's rule); only a .yaml/.yml or a path can be a peer's file.
    if text.endswith((".yaml", ".yml")) or "/" in text:
        check_bounded(text)  # a FIFO, a deep nest or an alias bomb is refused before any YAML reader
    result = peer_plan(text) if text.endswith((".yaml", ".yml")) or "/" in text else None
    if result is None:
        return load_preset(text)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    article = "an" if result.source_format[:1].lower() in "aeiou" else "a"
    print(f"note: {text} read as {article} {result.source_format} config (`zerotui import {text} -o plan.yaml` "
          "keeps the plan)", file=sys.stderr)
    return result.plan
