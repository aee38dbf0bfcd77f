"""`zerotui spare [start [--wait S] | stop] [--json]`: a worker with its libraries imported, ready for the
next `zerotui train` or `resume` in this environment (core/run/spare.py). With no action: the spares
that are up. The wizard starts one when it opens; this is for scripts and shells."""
from __future__ import annotations

import argparse
import os
import time

from zerotui.core.errors import RunError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("list", "start", "stop"), default="list",
                        help="list (default), start one for this environment, or stop them all")
    parser.add_argument("--wait", type=float, metavar="SECONDS", default=0.0,
                        help="with start: return once its libraries are imported (at most SECONDS)")
    parser.add_argument("--json", action="store_true", help="print the spares (or the one started) as JSON")


def run(args: argparse.Namespace) -> int:
    from zerotui.cli.json_result import print_json
    from zerotui.core.run import spare as sp

    if args.wait < 0:
        raise RunError(f"--wait {args.wait:g}: a number of seconds cannot be negative", "e.g. --wait 120",
                       field="wait")
    if args.action == "stop":
        stopped = sp.stop_spares()
        if args.json:
            print_json({"stopped": [s.to_dict() for s in stopped]})
        else:
            print(f"stopped {len(stopped)} spare(s)")
        return 0
    if args.action == "start":
        if not sp.enabled():
            raise RunError(f"spares are off in this environment ({sp.SPARE_ENV}={os.environ.get(sp.SPARE_ENV)})",
                           f"unset {sp.SPARE_ENV} to use them")
        spare = sp.start_spare()
        if spare is None:
            raise RunError(f"could not start a spare in {sp.spares_dir()}",
                           "check that zerotui's cache folder is writable (ZEROTUI_CACHE_DIR moves it)")
        started = time.monotonic()
        ready = sp.wait_ready(spare, args.wait) if args.wait else spare.ready
        spare = sp.read_spare(spare.folder) or spare  # with its worker's pid, once it has written it
        if args.wait and not ready:
            raise RunError(f"the spare (supervisor pid {spare.supervisor}) was not ready within {args.wait:g} s",
                           f"its output is in {spare.folder / sp.LOG} (or {sp.spares_dir() / sp.FAILED_LOG} if it ended)")
        if args.json:
            print_json({**spare.to_dict(), "ready": ready, "waited_s": round(time.monotonic() - started, 2)})
        else:
            print(f"spare supervisor pid {spare.supervisor} " + ("ready" if ready else "importing its libraries")
                  + f"; it ends after {sp.idle_seconds():.0f} s unclaimed (`zerotui spare stop` ends it now)")
        return 0
    spares = sp.list_spares()
    if args.json:
        print_json([s.to_dict() for s in spares])
        return 0
    for s in spares:
        print(f"pid {s.supervisor}  {'ready' if s.ready else 'importing'}  up {time.time() - s.started:.0f} s  {s.folder}")
    if not spares:
        print("no spare is up (`zerotui spare start` starts one; the wizard starts one when it opens)")
    return 0
