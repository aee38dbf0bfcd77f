"""`zerotui sweep PRESET|PLAN.yaml --trials N --space SPEC [PLAN OPTIONS]`: a hyper-parameter search, one
normal run per trial (core/sweep/), in the background unless --foreground.

    zerotui sweep tiny-cpu-demo --trials 8 --space lr=1e-5..3e-4:log,grad_accum=1,2,4 --max-steps 60
    zerotui sweep PLAN.yaml --trials 16 --space ... --parallel 4   up to 4 trials at once, one per GPU
    zerotui sweep --show [SWEEP] [--json]     trials, their values and eval losses, the best so far
    zerotui sweep --resume SWEEP              start the driver again (after a crash or a reboot)
    zerotui sweep --stop SWEEP                stop the driver and its running trials gracefully

Ctrl-C of a --foreground sweep stops it as --stop does (again: its trials stop at once, without a
checkpoint; a third time: the CLI detaches).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from zerotui.cli.plan_options import add_plan_options, plan_from_args
from zerotui.core.errors import RunError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="PRESET|PLAN.yaml", help="the plan the trials start from")
    parser.add_argument("--trials", type=int, default=10, help="trials to run (default 10)")
    parser.add_argument("--space", default="", metavar="SPEC",
                        help="what to search: NAME=LOW..HIGH[:log] or NAME=A,B,C, comma-separated, "
                             "e.g. lr=1e-5..3e-4:log,grad_accum=4,8,16")
    parser.add_argument("--parallel", type=int, default=1, metavar="N",
                        help="trials at once, each a single-GPU run on its own GPU (CPU processes on a machine "
                             "without GPUs); default 1: one at a time, on the plan's GPUs")
    parser.add_argument("--sampler-seed", type=int, default=0, help="the sampler's seed (the plan's --seed stays)")
    parser.add_argument("--foreground", action="store_true", help="run the trials in this terminal")
    parser.add_argument("--force", action="store_true", help="start trials the estimate says do not fit")
    parser.add_argument("--show", nargs="?", const="", metavar="SWEEP", help="print a sweep's trials")
    parser.add_argument("--watch", nargs="?", const="", metavar="SWEEP",
                        help="the sweep screen: trials, the best so far, a chart of the objective")
    parser.add_argument("--resume", metavar="SWEEP", help="start a sweep's driver again")
    parser.add_argument("--stop", metavar="SWEEP", help="stop a sweep (its running trials stop with a checkpoint)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object: the sweep started or stopped ({sweep, path, pid, ...}), its "
                             "trials with --show, its summary at the end with --foreground")
    add_plan_options(parser)


def _runs_dir(args: argparse.Namespace) -> Path:
    from zerotui.core.paths import default_runs_dir

    given = getattr(args, "plan__runs_dir", None)
    return Path(given).expanduser() if given else default_runs_dir()


def _start_driver(paths, foreground: bool, as_json: bool = False, started: dict | None = None) -> int:
    from zerotui.cli.json_result import print_json
    from zerotui.core.sweep.start import start_driver

    if foreground:
        code = _foreground(paths, as_json)
        if as_json:
            from zerotui.core.sweep.report import summary

            print_json({**summary(paths), "exit_code": code}, indent=1)
        return code
    pid = start_driver(paths)
    if as_json:
        print_json({"sweep": paths.name, "path": str(paths.root), "pid": pid, **(started or {})})
        return 0
    print(f"sweep {paths.name} started (driver pid {pid})")
    print(f"  folder: {paths.root}")
    print(f"  watch:  zerotui sweep --watch {paths.name}   (or --show; each trial is a run: zerotui runs)")
    print(f"  stop:   zerotui sweep --stop {paths.name}")
    return 0


def _driver_argv(paths) -> list[str]:
    return [sys.executable, "-m", "zerotui.core.sweep.driver", str(paths.root)]


def _foreground(paths, as_json: bool) -> int:
    """The driver as a child in a session of its own, so that Ctrl-C reaches it once, from here: the
    terminal's SIGINT used to reach both, and subprocess.call then killed the driver (SIGKILL) a quarter
    of a second later, its trial left training and "running" in the study. Ctrl-C (or a SIGTERM here, which
    a process-group kill such as `timeout`'s used to deliver to the driver too): the driver stops its
    trials with a checkpoint (passed on as the SIGTERM `--stop` sends: a driver still importing ends
    without a traceback); again: at once; a third: detach, the sweep ending in the background. 130 when
    interrupted."""
    # --json: the driver's lines go to stderr (fd 2: a child process has no sys.stderr object)
    proc = subprocess.Popen(_driver_argv(paths), stdout=2 if as_json else None, start_new_session=True)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    interrupts = 0
    try:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:
                interrupts += 1
                if interrupts > 2:
                    sys.stderr.write(f"\nzerotui: detached; sweep {paths.name} goes on stopping in the background "
                                     f"(`zerotui sweep --show {paths.name}`)\n")
                    return 130
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    if interrupts and code == -signal.SIGTERM:  # ended while still importing: it had started nothing
        sys.stderr.write(f"zerotui: sweep {paths.name} stopped before its driver began; "
                         f"`zerotui sweep --resume {paths.name}` starts it again\n")
    return 130 if interrupts else code


def _what_starts(paths, resumed: bool) -> dict:
    """What --json says a started sweep will do, from its spec: the same for a new and a resumed one."""
    from zerotui.core.sweep.folder import read_spec
    from zerotui.core.sweep.space import Param

    spec = read_spec(paths)
    return {"resumed": resumed, "trials": int(spec["trials"]), "parallel": int(spec.get("parallel", 1)),
            "space": [Param.from_dict(p).describe() for p in spec["space"]]}


def _check_machine(paths, asked: int) -> None:
    """A sweep resumed on another machine: its --parallel must still fit here (one line, exit 2, now
    rather than in driver.log)."""
    from zerotui.core.errors import PlanError
    from zerotui.core.plan.schema import plan_from_dict
    from zerotui.core.sweep.folder import read_spec
    from zerotui.core.sweep.slots import detected_gpus, plan_slots

    spec = read_spec(paths)
    parallel = int(spec.get("parallel", 1))
    if asked not in (1, parallel):  # 1: the option's default, i.e. not given
        raise PlanError(f"--parallel {asked}: sweep {paths.name} was started with --parallel {parallel}, "
                        "and its trials' GPUs follow from that", "resume it without --parallel", "parallel")
    if parallel > 1:
        plan_slots(plan_from_dict(spec["plan"], str(paths.spec)), parallel, detected_gpus())


def run(args: argparse.Namespace) -> int:
    from zerotui.core.sweep.folder import driver_alive, find_sweep, read_status, study_exists

    runs_dir = _runs_dir(args)
    if args.show is not None:
        from zerotui.cli.sweep_table import show

        return show(find_sweep(runs_dir, args.show or None), args.json)
    if args.watch is not None:
        from zerotui.tui.launch import run_sweep_watch

        return run_sweep_watch(find_sweep(runs_dir, args.watch or None))
    if args.stop:
        paths = find_sweep(runs_dir, args.stop)
        if not driver_alive(paths):
            raise RunError(f"sweep {paths.name} is not running", f"`zerotui sweep --resume {paths.name}` starts it")
        status = read_status(paths)
        pid = int(status["pid"])
        os.kill(pid, signal.SIGTERM)
        if args.json:
            from zerotui.cli.json_result import print_json

            print_json({"sweep": paths.name, "path": str(paths.root), "pid": pid, "stopping": True})
            return 0
        if status.get("state") == "stopping":  # the driver's second stop is a stop at once
            print(f"sweep {paths.name} was stopping already: its running trials now stop at once, without a "
                  "checkpoint")
        else:
            print(f"stopping sweep {paths.name}: its running trials save a checkpoint and stop")
        return 0
    if args.resume:
        paths = find_sweep(runs_dir, args.resume)
        if driver_alive(paths):
            raise RunError(f"sweep {paths.name} is running already", f"`zerotui sweep --show {paths.name}`")
        study_exists(paths)  # a folder in study.db's place: said here, not in driver.log
        _check_machine(paths, args.parallel)
        return _start_driver(paths, args.foreground, args.json, _what_starts(paths, resumed=True))
    from zerotui.core.sweep.start import prepare_sweep, runs_dir_for

    plan = plan_from_args(args, args.source)
    runs_dir = runs_dir_for(plan, getattr(args, "plan__runs_dir", None))
    paths, space = prepare_sweep(plan, args.space, args.trials, runs_dir, seed=args.sampler_seed, force=args.force,
                                 parallel=args.parallel)
    if args.json:
        return _start_driver(paths, args.foreground, True, _what_starts(paths, resumed=False))
    print(f"search space: {'; '.join(p.describe() for p in space)}; {args.trials} trials"
          + (f", {args.parallel} at a time" if args.parallel > 1 else ""))
    return _start_driver(paths, args.foreground)
