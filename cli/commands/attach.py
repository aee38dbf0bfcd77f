"""`zerotui attach [RUN]`: the dashboard on a run, live or finished (default: the newest live run).

The worker never depends on this process: quitting (d, or a dropped SSH connection) leaves the run
training, and a later `zerotui attach` shows its whole history from events.jsonl.

``--json`` opens nothing and needs no terminal: it prints what attach would offer — every run as
``zerotui runs --json`` lists it (only RUN's when given) and ``default``, the run attach would open."""
from __future__ import annotations

import argparse
import os
import sys

from zerotui.cli.arg_types import folder
from zerotui.core.errors import RunError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", metavar="RUN",
                        help="run folder, name, or a unique part of it (default: the newest live run, "
                             "else the newest run)")
    parser.add_argument("--runs-dir", type=folder, metavar="DIR",
                        help="where the runs are (default: the user data folder, or ZEROTUI_RUNS_DIR)")
    parser.add_argument("--json", action="store_true",
                        help="print {default, runs: [...]} (the runs the dashboard would offer) instead of opening it")
    parser.add_argument("--read-only", action="store_true",
                        help="refuse every control (pause, checkpoint, stop, resume): what `zerotui serve` shows")


def run(args: argparse.Namespace) -> int:
    from zerotui.cli.run_choice import say_choice
    from zerotui.core.run.folder import require_intact, resolve_run

    if args.json:
        return _print_listing(args.run, args.runs_dir)
    paths = resolve_run(args.run, args.runs_dir, prefer_live=True, note=say_choice("attach"))
    require_intact(paths, "attach to")  # a FIFO events.jsonl would hang the dashboard's reader
    served = "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")  # textual-serve relays it to a browser
    if not served and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise RunError(f"`zerotui attach` needs a terminal (found run {paths.name})",
                       "run it in a terminal or tmux; `zerotui runs` prints the state without one")
    from zerotui.tui.launch import run_attach

    return run_attach(paths, read_only=args.read_only)


def _print_listing(name, runs_dir) -> int:
    """Like `zerotui runs --json`, an empty folder is an empty list (exit 0), not an error; a RUN that
    names nothing is one (exit 2), as without --json."""
    import json
    import time

    from zerotui.cli.commands.runs import run_record
    from zerotui.cli.run_choice import say_choice
    from zerotui.core.run.folder import list_runs, resolve_run, summarise

    runs = list_runs(runs_dir) if not name else []
    chosen = resolve_run(name, runs_dir, prefer_live=True, note=say_choice("attach")) if name or runs else None
    if name:
        runs = [summarise(chosen)]
    now = time.time()
    print(json.dumps({"default": chosen.name if chosen else None, "runs": [run_record(r, now) for r in runs]},
                     indent=1))
    return 0
