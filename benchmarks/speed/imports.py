"""Where a worker's first seconds go: the libraries it imports, one after another, timed in fresh processes.

    python -m benchmarks.speed.imports --model FOLDER --out imports.json [--importtime RAW.txt]

Each repeat runs a new Python that imports what a training worker imports, in the worker's order, and
times every stage (``perf_counter`` between them): torch, DeepSpeed, transformers' tokenizer classes and
the tokenizer of FOLDER, the causal-LM classes and the model's modeling module, PEFT, Liger's patching
module (where installed), and CUDA's initialisation (where a GPU is). A second variant initialises CUDA
in a thread started right after torch, to see whether that overlaps with the imports. ``--importtime``
runs the sequence once more under ``-X importtime`` and writes its raw report, plus the self time summed
per top-level package into the JSON.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

CHILD = r'''
import json, sys, threading, time
model, cuda_thread = sys.argv[1], sys.argv[2] == "1"
t = [("start", time.perf_counter())]
def mark(name): t.append((name, time.perf_counter()))
import torch; mark("import torch")
if cuda_thread and torch.cuda.is_available():
    th = threading.Thread(target=lambda: torch.zeros(1, device="cuda")); th.start()
import deepspeed; mark("import deepspeed")
from transformers import AutoTokenizer; mark("import transformers AutoTokenizer")
tok = AutoTokenizer.from_pretrained(model); mark("AutoTokenizer.from_pretrained")
from transformers import AutoConfig, AutoModelForCausalLM; cfg = AutoConfig.from_pretrained(model); mark("AutoConfig")
import importlib; importlib.import_module(f"transformers.models.{cfg.model_type}.modeling_{cfg.model_type}"); mark("modeling module")
import peft; mark("import peft")
try:
    import liger_kernel.transformers.monkey_patch; mark("import liger monkey_patch")
except ImportError:
    pass
import datasets; mark("import datasets")
if cuda_thread and torch.cuda.is_available():
    th.join(); mark("join CUDA thread")
elif torch.cuda.is_available():
    torch.zeros(1, device="cuda"); mark("CUDA init")
print(json.dumps([(n, round(b - a, 3)) for (n, b), (_, a) in zip(t[1:], t[:-1])] + [("total", round(t[-1][1] - t[0][1], 3))]))
'''


def _run(model: str, cuda_thread: bool, extra: list[str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *(extra or []), "-c", CHILD, model, "1" if cuda_thread else "0"],
                          capture_output=True, text=True, timeout=600, check=False)


def self_times(raw: str, top: int = 25) -> dict:
    """``-X importtime`` lines summed per top-level package (self µs), and the slowest single modules."""
    per_pkg: dict[str, int] = defaultdict(int)
    mods: list[tuple[int, str]] = []
    for line in raw.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        try:
            self_us, _cum, name = (x.strip() for x in line[len("import time:"):].split("|"))
            us = int(self_us)
        except ValueError:
            continue
        name = name.strip()
        parts = name.split(".")
        key = ".".join(parts[:3]) if parts[0] == "transformers" and len(parts) > 2 else parts[0]
        per_pkg[key] += us
        mods.append((us, name))
    return {"self_s_by_package": {k: round(v / 1e6, 3) for k, v in sorted(per_pkg.items(), key=lambda kv: -kv[1])[:top]},
            "slowest_modules_self_s": [(n, round(us / 1e6, 3)) for us, n in sorted(mods, reverse=True)[:top]]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--importtime", type=Path, default=None)
    a = ap.parse_args()
    out: dict = {"command": " ".join(sys.argv), "runs": []}
    _run(a.model, False)  # page cache and .pyc files warm, as on a warm machine
    for rep in range(a.repeats):
        for cuda_thread in (False, True):
            p = _run(a.model, cuda_thread)
            ok = p.returncode == 0 and p.stdout.strip()
            row = {"repeat": rep, "cuda_in_thread": cuda_thread,
                   "stages_s": json.loads(p.stdout.strip().splitlines()[-1]) if ok else None}
            if not ok:
                row["error"] = p.stderr[-1500:]
            out["runs"].append(row)
            print(json.dumps(row), flush=True)
    if a.importtime:
        p = _run(a.model, False, ["-X", "importtime"])
        a.importtime.write_text(p.stderr)
        out["importtime"] = self_times(p.stderr)
    a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
