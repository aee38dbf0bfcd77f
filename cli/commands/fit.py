"""`zerotui fit [PRESET|PLAN.yaml] [PLAN OPTIONS] [--gpu-mem ..] [--ram ..] [--json]`: the ways to run the
plan's job that fit this (or the stated) machine, fastest first; what would help when none does.

Exit codes as for ``estimate``: 0 something fits, 3 nothing does (the list of what would help is still
printed, or ``why_nothing_fits`` with --json), 2 bad input, 1 the machine failed us."""
from __future__ import annotations

import argparse
import json

from zerotui.cli.commands.estimate import EXIT_DOES_NOT_FIT
from zerotui.cli.hardware_options import add_hardware_options, hardware_from_args
from zerotui.cli.plan_options import add_plan_options, plan_from_args, warn_unusable_nvme


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="PRESET|PLAN.yaml",
                        help="a preset name or a plan file (options below override it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the list")
    parser.add_argument("--top", type=int, default=5, metavar="N", help="show the N fastest (default 5)")
    add_hardware_options(parser)
    add_plan_options(parser)


def _flags(changes: dict) -> str:
    out = []
    for field, (_old, new) in changes.items():
        flag = "--" + field.replace("_", "-")
        if isinstance(new, bool):
            out.append(flag if new else f"--no-{field.replace('_', '-')}")
        else:
            out.append(f"{flag} {new}")
    return " ".join(out)


def run(args: argparse.Namespace) -> int:
    from zerotui.core.errors import PlanError
    from zerotui.core.estimate.recommend import recommend, why_nothing_fits
    from zerotui.core.model.spec import spec_for_plan

    if args.top < 1:
        raise PlanError(f"--top: {args.top} shows nothing", "give --top 1 or more")
    plan = plan_from_args(args, args.source)
    from zerotui.core.run.input_check import check_inputs

    check_inputs(plan, training=False)
    warn_unusable_nvme(plan)  # as estimate: NVMe offload plans are among what fit weighs
    spec = spec_for_plan(plan)
    hw = hardware_from_args(args, plan)
    recs = recommend(plan, hw, spec, limit=args.top)
    why = [] if recs else why_nothing_fits(plan, hw, spec)
    if args.json:
        print(json.dumps({
            "recommendations": [{
                "rank": i + 1, "reason": r.reason, "relative_speed": r.relative_speed,
                "step_seconds": round(r.step_seconds, 4),
                "changes": {k: list(v) for k, v in r.changes.items()},
                "plan": {k: r.plan.to_dict()[k] for k in ("stage", "offload_optimizer", "offload_params",
                                                          "micro_batch", "grad_accum", "grad_ckpt", "pin_memory")},
                "budget": r.budget.to_dict()} for i, r in enumerate(recs)],
            "why_nothing_fits": why}, indent=1, default=str))
        return 0 if recs else EXIT_DOES_NOT_FIT
    if not recs:
        print("nothing fits:")
        for line in why:
            print(f"  {line}")
        return EXIT_DOES_NOT_FIT
    print(f"{len(recs)} fastest plan(s) that fit, for the same job ({plan.micro_batch * plan.grad_accum} "
          f"sequences of {plan.seq_len} tokens per GPU per step):")
    for i, r in enumerate(recs):
        print(f"{i + 1}. {r.reason}")
        print(f"   {'as asked' if not r.changes else 'use: ' + _flags(r.changes)}")
    print("speeds are relative, from step times measured on an H200 (docs/estimator.md)")
    return 0
