"""`zerotui resume RUN`: continue a stopped, failed or lost run from its last complete checkpoint."""
from __future__ import annotations

import argparse
import sys

from zerotui.cli.arg_types import folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="run folder, name, or a unique part of the name")
    parser.add_argument("--foreground", action="store_true", help="stay attached and print steps until it ends")
    parser.add_argument("--force", action="store_true",
                        help="resume even when the memory estimate says the plan does not fit")
    parser.add_argument("--restart", action="store_true",
                        help="train again from step 0 when the run saved checkpoints but none is left to "
                             "continue from (deleted, or set aside as damaged)")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR", help="where the runs are (default: the user data folder)")
    parser.add_argument("--json", action="store_true",
                        help="print {run, path, pid} as JSON; with --foreground, the run's end once it has ended")


def run(args: argparse.Namespace) -> int:
    from zerotui.cli.commands.train import print_started, print_warning
    from zerotui.cli.run_follow import events_end, follow_run
    from zerotui.core.run.start import last_checkpoint_step, resume_run
    from zerotui.core.run.folder import resolve_run

    paths = resolve_run(args.run, args.runs_dir, prefer_live=False)
    # Follow from the end of the last whole line, not the file's size: a run killed in the middle of a
    # line leaves it torn, and an offset inside it made the follow read the whole file again, every line
    # of the earlier sessions (their loading lines first) printed before the resumed worker's own.
    offset = events_end(paths)
    step = last_checkpoint_step(paths)
    paths = resume_run(paths, force=args.force, restart=args.restart, warn=print_warning)
    if not args.json and step is not None:
        print(f"continuing from the checkpoint at step {step}")
    elif not args.json and not args.foreground:
        # In the foreground the worker's own line says it, once it has looked (a second wording here
        # read as two events); detached, this is the only place it is said.
        print("no complete checkpoint: the run starts again from step 0")
    if args.foreground and args.json:
        from zerotui.cli.foreground_json import follow_as_json

        return follow_as_json(paths, offset, resumed=True)
    if args.foreground:
        sys.stdout.flush()
        return follow_run(paths, offset)
    print_started(paths, True, args.json)
    return 0
