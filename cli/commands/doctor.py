"""`zerotui doctor [--json]`: what this machine has, which versions are installed, whether DeepSpeed can
build its ops, and the known pitfalls found, each with its fix.

Exit code 0 when nothing would stop training, 1 when an error-level problem was found (so scripts and
CI can gate on it), 2 for bad arguments like every other command.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys

from zerotui.core.errors import PlanError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object (stable keys) instead of text")
    parser.add_argument("--no-software", action="store_true",
                        help="skip importing torch and DeepSpeed (hardware and environment checks only; fast)")
    parser.add_argument("--no-disks", action="store_true", help="do not list mounted disks")
    parser.add_argument("--write-test", metavar="DIR",
                        help="also measure the sequential write speed of the drive under the folder DIR (a "
                             "temporary file is written there, then removed), e.g. your --nvme-path")
    parser.add_argument("--write-size", metavar="SIZE", default="256MiB",
                        help="how much the write test writes (default 256MiB)")
    parser.add_argument("--build-ops", action="store_true",
                        help="compile the DeepSpeed ops runs load (cpu_adam, fused_adam, ...) now, once per "
                             "machine, instead of during a run's start")


def build_ops(quiet: bool = False, as_json: bool = False) -> int:
    """``--build-ops``: every op a plan on this machine may load; exit 1 when one cannot be built. With
    ``as_json`` the progress lines go to stderr and stdout gets {ok, ops: [{name, state, seconds, error}]}."""
    from zerotui.cli.json_result import print_json, stdout_to_stderr

    # DeepSpeed's import and its builders print on stdout (its accelerator notice, "Loading extension")
    with stdout_to_stderr() if as_json else contextlib.nullcontext():
        ops = _build_each(quiet, sys.stderr if as_json else sys.stdout)
    code = 1 if any(op["state"] == "failed" for op in ops) else 0
    if as_json:
        print_json({"ok": code == 0, "ops": ops, "exit_code": code}, indent=2)
    return code


def _build_each(quiet: bool, out) -> list[dict]:
    import torch
    from zerotui.core.deepspeed.prebuild import all_ops, build, is_built

    ops: list[dict] = []
    for name in all_ops(torch.cuda.is_available()):
        if is_built(name):
            ops.append({"name": name, "state": "built already", "seconds": None})
            if not quiet:
                print(f"{name}: already built", file=out)
            continue
        if not quiet:
            print(f"{name}: building (about a minute)...", file=out, flush=True)
        try:
            seconds = build(name)
        except Exception as err:  # noqa: BLE001 - a compiler or CUDA toolkit problem: `zerotui doctor` explains
            why = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
            ops.append({"name": name, "state": "failed", "seconds": None, "error": why})
            print(f"{name}: could not be built ({why}); `zerotui doctor` lists what is missing", file=out)
            continue
        ops.append({"name": name, "state": "built", "seconds": round(seconds, 1)})
        if not quiet:
            print(f"{name}: built in {seconds:.0f} s", file=out)
    return ops


def run(args: argparse.Namespace) -> int:
    if args.build_ops:
        return build_ops(as_json=args.json)
    from zerotui.core.doctor.report import collect, render_text
    from zerotui.core.doctor.write_test import write_test
    from zerotui.core.hardware.detect import detect, parse_size

    write_size = parse_size(args.write_size, "--write-size")
    if write_size <= 0:
        raise PlanError("--write-size: the write test needs at least one byte", "e.g. --write-size 256MiB")
    report = collect(probe_software=not args.no_software, hardware=detect(probe_disks=not args.no_disks))
    if args.write_test:
        probe = write_test(args.write_test, write_size)  # HardwareError -> one line, exit 2
        report["write_test"] = {"path": args.write_test, "bytes_per_s": probe.bytes_per_s, "direct": probe.direct,
                                "size_bytes": probe.size_bytes, "seconds": probe.seconds}
    if args.json:
        json.dump(report, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    else:
        width = max(60, min(shutil.get_terminal_size((80, 24)).columns, 100))
        text = render_text(report, width=width)
        if args.write_test:
            w = report["write_test"]
            text += (f"Write test: {w['bytes_per_s'] / 1e9:.2f} GB/s to {w['path']} "
                     f"({'O_DIRECT' if w['direct'] else 'buffered + fsync'}, {w['size_bytes'] >> 20} MiB)\n")
        sys.stdout.write(text)
    return 0 if report["ok"] else 1
