"""`zerotui train PRESET|PLAN.yaml [PLAN OPTIONS]`: start a run, detached unless --foreground."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zerotui.cli.plan_options import add_plan_options, plan_from_args, plan_overrides
from zerotui.core.errors import PlanError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="PRESET|PLAN.yaml",
                        help="a preset name or a plan file (options below override it)")
    parser.add_argument("--foreground", action="store_true",
                        help="stay attached and print steps until the run ends (Ctrl-C stops it gracefully)")
    parser.add_argument("--force", action="store_true",
                        help="launch even when the memory estimate says the plan does not fit, or the runs "
                             "folder has no room for one of its checkpoints")
    parser.add_argument("--resume", metavar="RUN",
                        help="continue RUN from its last complete checkpoint (its own plan is used)")
    parser.add_argument("--json", action="store_true",
                        help="print {run, path, pid} as JSON; with --foreground, the run's end "
                             "{run, path, state, step, loss, reason, exit_code} once it has ended")
    add_plan_options(parser)


def print_started(paths, resumed: bool, as_json: bool) -> None:
    from zerotui.core.run.folder import read_status

    pid = read_status(paths).get("pid")
    if as_json:
        print(json.dumps({"run": paths.name, "path": str(paths.root), "pid": pid, "resumed": resumed}))
        return
    verb = "resumed" if resumed else "started"
    print(f"{verb} run {paths.name}" + (f" (worker pid {pid})" if pid else ""))
    print(f"  folder: {paths.root}")
    print(f"  watch:  zerotui attach {paths.name}   (or: zerotui runs)")
    print(f"  stop:   zerotui stop {paths.name}   (--now: without a checkpoint)")
    print(f"  log:    {paths.log}")


def print_warning(line: str) -> None:
    """A launch's warning (it goes ahead): on stderr, like the plan's, so --json keeps stdout a document."""
    print(f"warning: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from zerotui.cli.run_follow import events_end, follow_run
    from zerotui.core.run.start import resume_run, start_run
    from zerotui.core.run.folder import resolve_run

    if args.resume:
        runs_dir = getattr(args, "plan__runs_dir", None)
        options = [k for k in plan_overrides(args) if k != "runs_dir"]
        if args.source or options or args.plan_preset or args.plan_file:
            raise PlanError("--resume continues a run with its own plan.yaml; it takes no preset, plan or "
                            "plan options", f"run `zerotui train --resume {args.resume}` alone")
        if runs_dir is not None and not runs_dir.strip():  # Path("") is ".": never the current folder by accident
            raise PlanError("--runs-dir is empty (an unset shell variable?)",
                            "give the folder the run is in, or leave --runs-dir out")
        # The plan option's value is text (the Plan makes it a Path); resolve_run takes a Path.
        paths = resolve_run(args.resume, Path(runs_dir) if runs_dir else None, prefer_live=False)
        offset = events_end(paths)
        paths = resume_run(paths, force=args.force, warn=print_warning)
    else:
        plan = plan_from_args(args, args.source)
        offset = 0
        paths = start_run(plan, runs_dir=Path(plan.runs_dir) if plan.runs_dir else None, force=args.force,
                          warn=print_warning)
    if args.foreground and args.json:
        from zerotui.cli.foreground_json import follow_as_json

        return follow_as_json(paths, offset, resumed=bool(args.resume))
    if args.foreground:
        print(f"run {paths.name} in {paths.root} (Ctrl-C stops it gracefully)")
        sys.stdout.flush()
        return follow_run(paths, offset)
    print_started(paths, bool(args.resume), args.json)
    return 0
