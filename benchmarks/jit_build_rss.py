"""Host RAM of a first-use build of DeepSpeed's ops, as zerotui's telemetry counts it: the resident set
summed over a process and all its children (core/hardware/telemetry.py sums the worker's tree, and the
compilers DeepSpeed's JIT build starts are children of the worker).

    python -m benchmarks.jit_build_rss --out benchmarks/results/jit-build-rss-cpu-DATE.json

Builds cpu_adam and async_io into a fresh, temporary TORCH_EXTENSIONS_DIR (nothing cached is touched),
sampling every 50 ms. async_io needs libaio's headers (apt install libaio-dev).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

BUILD = ("from deepspeed.ops.op_builder import CPUAdamBuilder, AsyncIOBuilder\n"
         "CPUAdamBuilder().load(verbose=False)\nAsyncIOBuilder().load(verbose=False)\n")


def tree_rss(root: psutil.Process) -> tuple[int, int, int]:
    """(the tree's RSS, the root's alone, how many processes), skipping those that ended meanwhile."""
    total, own, procs = 0, 0, [root]
    try:
        procs += root.children(recursive=True)
    except psutil.Error:
        pass
    for p in procs:
        try:
            rss = p.memory_info().rss
        except psutil.Error:
            continue
        total += rss
        own = rss if p.pid == root.pid else own
    return total, own, len(procs)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zt-jit-") as cache:
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=cache)
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", BUILD], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        root = psutil.Process(proc.pid)
        peak_tree = peak_own = most = 0
        while proc.poll() is None:
            tree, own, n = tree_rss(root)
            peak_tree, peak_own, most = max(peak_tree, tree), max(peak_own, own), max(most, n)
            time.sleep(0.05)
        err = proc.stderr.read() if proc.stderr else ""
    result = {"command": " ".join([sys.executable, "-m", "benchmarks.jit_build_rss", *argv]),
              "date": time.strftime("%Y-%m-%d"), "host": platform.node(), "cpus": os.cpu_count(),
              "rc": proc.returncode, "seconds": round(time.monotonic() - t0, 1),
              "tree_rss_peak": peak_tree, "python_rss_peak": peak_own, "processes_most": most,
              "error_tail": err[-2000:] if proc.returncode else ""}
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"rc {proc.returncode} in {result['seconds']} s: the tree peaked at {peak_tree / 2**30:.2f} GiB, "
          f"the Python process alone at {peak_own / 2**30:.2f} GiB, {most} processes at most")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
