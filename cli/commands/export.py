"""`zerotui export PRESET|PLAN.yaml -o DIR [PLAN OPTIONS]`: ds_config.json, plan.yaml and launch.sh for the
plain ``deepspeed`` command, with DIR as the run directory of zerotui's worker (see core/export/deepspeed_cli.py)."""
from __future__ import annotations

import argparse

from zerotui.cli.arg_types import folder
from zerotui.cli.plan_options import add_plan_options, plan_from_args, warn_unusable_nvme
from zerotui.core.errors import PlanError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="PRESET|PLAN.yaml",
                        help="a preset name or a plan file (options below override it)")
    parser.add_argument("-o", "--out", required=True, type=folder, metavar="DIR",
                        help="folder to write ds_config.json, plan.yaml and launch.sh into")
    parser.add_argument("--force", action="store_true", help="replace those files if they exist")
    parser.add_argument("--json", action="store_true",
                        help="print {out, files, world_size, train_batch, notes, launch} as JSON")
    add_plan_options(parser)


def run(args: argparse.Namespace) -> int:
    from zerotui.core.export.deepspeed_cli import export_plan

    if args.source is None and not (args.plan_preset or args.plan_file):  # "" is refused by name below
        raise PlanError("export needs a starting point: a preset name or a plan file",
                        "e.g. `zerotui export tiny-cpu-demo -o ./demo` (`zerotui presets` lists them)")
    plan = plan_from_args(args, args.source)
    warn_unusable_nvme(plan)  # the folder may be for the machine the export is copied to: not refused
    source = args.source or args.plan_preset or str(args.plan_file)
    result = export_plan(plan, args.out, source, force=args.force)
    if args.json:
        from zerotui.cli.json_result import print_json
        from zerotui.core.export.deepspeed_cli import FILES

        print_json({"out": str(result.out), "files": {name: str(result.out / name) for name in FILES},
                    "world_size": result.world, "train_batch": result.train_batch, "notes": result.notes,
                    "launch": str(result.out / "launch.sh")})
        return 0
    print(result.summary())
    return 0
