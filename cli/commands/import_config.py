"""`zerotui import CONFIG [-o PLAN.yaml] [PLAN OPTIONS]`: an existing ds_config.json, or a LLaMA-Factory or
axolotl training YAML (docs/peer_configs.md), as the start of a plan, with a warning for every unknown key,
conflicting value, "auto" placeholder and setting not carried over. Any other file is refused (exit 2)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zerotui.cli.plan_options import add_plan_options, plan_overrides
from zerotui.core.errors import PlanError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", type=Path, metavar="DS_CONFIG.json|TRAIN.yaml",
                        help="a DeepSpeed ds_config.json, or a LLaMA-Factory / axolotl training YAML")
    parser.add_argument("-o", "--out", type=Path, metavar="PLAN.yaml",
                        help="write the plan here (default: print it; warnings go to stderr)")
    parser.add_argument("--force", action="store_true", help="replace PLAN.yaml if it exists")
    parser.add_argument("--json", action="store_true",
                        help="print {plan, format, warnings, dropped, kept, world_size} as JSON")
    # A ds_config names no model or data: give them (and anything else) as plan options; they also win
    # over what a training YAML says.
    add_plan_options(parser, with_source=False)


def run(args: argparse.Namespace) -> int:
    from zerotui.core.deepspeed.peers import import_training_config

    result = import_training_config(args.config, overrides=plan_overrides(args))
    yaml_text = f"# imported by zerotui from {args.config} ({result.source_format})\n" + result.plan.to_yaml()
    if args.out is not None:
        _write_plan(args.out, yaml_text, args.force)
    if args.json:
        print(json.dumps({"plan": result.plan.to_dict(), "format": result.source_format, "warnings": result.warnings,
                          "dropped": result.dropped, "kept": result.kept, "world_size": result.world_size}, indent=2))
        return 0
    # With -o the report is the output; without, the plan is, so the report goes to stderr.
    report = sys.stdout if args.out is not None else sys.stderr
    for w in result.warnings:
        print(f"warning: {w}", file=report)
    # A training YAML's warnings already name each key not carried over ("...: not carried over; ...").
    for d in result.dropped if result.source_format == "ds_config" else ():
        print(f"dropped: {d}", file=report)
    if result.kept:
        print(f"kept verbatim in ds_overrides: {', '.join(result.kept)}", file=report)
    if args.out is None:
        sys.stdout.write(yaml_text)
    else:
        print(f"wrote {args.out} ({len(result.warnings)} warning(s)); next: zerotui estimate --plan {args.out}")
    return 0


def _write_plan(path: Path, text: str, force: bool) -> None:
    from zerotui.core.atomic import atomic_write_text, create_exclusive_text

    if path.is_dir():
        raise PlanError(f"{path} is a folder", "give -o the path of the plan .yaml to write")
    try:
        if force:
            atomic_write_text(path, text)
        else:
            create_exclusive_text(path, text)
    except FileExistsError:
        raise PlanError(f"{path} already exists", "use --force to replace it, or another -o path") from None
    except OSError as err:
        raise PlanError(f"cannot write {path}: {err.strerror or err}", "check the folder exists and is writable") from None
