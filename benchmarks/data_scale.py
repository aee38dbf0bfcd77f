"""Host memory and time to the first batch as the training data grows: 10k, 100k and 1M JSONL rows.

    python -m benchmarks.data_scale OUT.json [--sizes 10000,100000,1000000] [--label after]

For each size it writes an alpaca JSONL file (generated here, seeded), then runs ``prepare_data`` on the
tiny model's tokenizer in a fresh process twice: with an empty cache (cold) and again with the cache the
first one left (warm). Each process reports the seconds from start to the first collated micro-batch,
its peak RSS (``ru_maxrss``: file-backed pages of memory-mapped data count here too) and its peak
anonymous RSS (``RssAnon``, sampled every 20 ms: the memory that cannot be paged back to the file).
Run it against another checkout (PYTHONPATH) to compare before/after a change.

    python -m benchmarks.data_scale OUT.json --first-step [--sizes ...]

times a whole run instead: ``zerotui train PLAN.yaml --foreground`` on the tiny model (CPU, real DeepSpeed
ZeRO-2, max_steps 2, no checkpoints) from the command's start to the first ``step`` event in the run's
events.jsonl, cold (fresh cache folder) then warm (the same folder again), with the seconds at which
each ``phase`` event came and the worker's peak RSS and RssAnon (its process tree, sampled every 50 ms
from /proc; the worker is detached, so its pid is read from status.json). A first run on 200 rows is
made before any size and recorded apart (``warmup``): it builds DeepSpeed's ops for this machine if
they are not built yet (minutes on 2 cores, once per machine), which no measured size should carry. Set
TORCH_EXTENSIONS_DIR to a folder of the benchmark's own when other checkouts on the machine build the
same ops with other paths (each such build replaces the last).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ["river", "stone", "seven", "light", "paper", "orange", "window", "quiet", "number", "simple",
         "garden", "forest", "metal", "answer", "letter", "planet", "music", "winter", "bridge", "market"]

PROBE = r"""
import json, resource, sys, threading, time
t0 = time.perf_counter()
peak = [0]
def anon():
    with open('/proc/self/status') as fh:
        for line in fh:
            if line.startswith('RssAnon:'):
                return int(line.split()[1]) * 1024
    return 0
def watch():
    while True:
        peak[0] = max(peak[0], anon())
        time.sleep(0.02)
threading.Thread(target=watch, daemon=True).start()
from zerotui.core.data.prepare import prepare_data
from zerotui.core.data.sampler import DataOrder
from zerotui.core.model.tiny import tiny_tokenizer
from zerotui.core.plan.schema import Plan
plan = Plan(data=sys.argv[1], seq_len=256, micro_batch=4)
data = prepare_data(plan, tiny_tokenizer())
order = DataOrder(len(data.train), plan.micro_batch, 1, 0, plan.seed)
batch = data.batch(data.train, order.next())
first_batch_s = time.perf_counter() - t0
peak[0] = max(peak[0], anon())
print(json.dumps({"first_batch_s": round(first_batch_s, 2), "cache_hit": data.report.cache_hit,
                  "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                  "peak_anon_rss_mib": round(peak[0] / 2**20, 1), "train_sequences": len(data.train),
                  "batch_shape": list(batch["input_ids"].shape)}))
"""


def write_rows(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            q = " ".join(rng.choices(WORDS, k=rng.randint(4, 20)))
            a = " ".join(rng.choices(WORDS, k=rng.randint(4, 40)))
            fh.write(json.dumps({"instruction": f"Row {i}: {q}?", "input": "", "output": a}) + "\n")


def probe(data: Path, cache: Path) -> dict:
    env = dict(os.environ, ZEROTUI_CACHE_DIR=str(cache), HF_DATASETS_CACHE=str(cache / "hf"))
    out = subprocess.run([sys.executable, "-c", PROBE, str(data)], capture_output=True, text=True, env=env,
                         check=False)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


TRAIN_PLAN = """name: data-scale
model: tiny
data: {data}
method: full
precision: fp32
stage: 2
gpus: 1
micro_batch: 4
grad_accum: 1
seq_len: 256
max_steps: 2
log_interval: 1
eval_interval: 1000
eval_batches: 1
save_interval: 0
save_minutes: 0
save_final: false
runs_dir: {runs}
seed: 42
"""


def _tree(pid: int) -> list[int]:
    import psutil

    try:
        p = psutil.Process(pid)
        return [pid] + [c.pid for c in p.children(recursive=True)]
    except psutil.Error:
        return []


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, RssAnon) bytes of one process, or zeros once it is gone."""
    rss = anon = 0
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("RssAnon:"):
                    anon = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, anon


def train_probe(data: Path, cache: Path, work: Path, timeout_s: float = 1800) -> dict:
    """One ``zerotui train --foreground`` to its first step: seconds, phases and the worker's peak memory."""
    runs = work / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    plan = work / "plan.yaml"
    plan.write_text(TRAIN_PLAN.format(data=data, runs=runs), encoding="utf-8")
    env = dict(os.environ, ZEROTUI_CACHE_DIR=str(cache), HF_DATASETS_CACHE=str(cache / "hf"))
    t0 = time.time()
    cli = subprocess.Popen([sys.executable, "-m", "zerotui.cli.main", "train", str(plan), "--foreground"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    peak_rss = peak_anon = top_rss = top_anon = 0
    worker = None
    first_step, phases = None, {}
    while first_step is None and time.time() - t0 < timeout_s:
        time.sleep(0.05)
        run = next(iter(runs.iterdir()), None) if runs.is_dir() else None
        if run is not None and worker is None:
            try:
                worker = json.loads((run / "status.json").read_text()).get("pid")
            except (OSError, ValueError):
                pass
        if worker:
            mem = [_memory(p) for p in _tree(worker)]
            peak_rss = max(peak_rss, sum(m[0] for m in mem))
            peak_anon = max(peak_anon, sum(m[1] for m in mem))
            top_rss = max([top_rss] + [m[0] for m in mem])
            top_anon = max([top_anon] + [m[1] for m in mem])
        if run is not None and (run / "events.jsonl").is_file():
            for line in (run / "events.jsonl").read_text().splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line still being written
                if e.get("type") == "phase":
                    phases.setdefault(e["name"], round(e["t"] - t0, 2))
                elif e.get("type") == "step" and first_step is None:
                    first_step = round(e["t"] - t0, 2)
        if cli.poll() is not None and first_step is None:
            break
    try:
        _, err = cli.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        cli.kill()
        err = ""
    # The tree (supervisor, rank process, and a compiler while DeepSpeed builds an op) and its largest
    # process, which is the rank that prepares the data and trains.
    out = {"first_step_s": first_step, "phases_s": phases,
           "worker_tree_peak_rss_mib": round(peak_rss / 2**20, 1),
           "worker_tree_peak_anon_rss_mib": round(peak_anon / 2**20, 1),
           "rank_peak_rss_mib": round(top_rss / 2**20, 1), "rank_peak_anon_rss_mib": round(top_anon / 2**20, 1),
           "exit": cli.returncode}
    if "tokenising" in phases and "loading model" in phases:
        out["data_s"] = round(phases["loading model"] - phases["tokenising"], 2)
    if first_step is None:
        out["error"] = (err.strip().splitlines() or ["no step event"])[-1]
    return out


def versions() -> dict:
    import datasets
    import deepspeed
    import pyarrow
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "datasets": datasets.__version__,
            "pyarrow": pyarrow.__version__, "transformers": transformers.__version__,
            "deepspeed": deepspeed.__version__}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--label", default="after")
    ap.add_argument("--first-step", action="store_true",
                    help="time `zerotui train --foreground` to its first step instead of prepare_data")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zerotui-datascale-"))
    results = []
    warmup = None
    try:
        if args.first_step:
            write_rows(work / "warmup.jsonl", 200)
            warmup = train_probe(work / "warmup.jsonl", work / "cache-warmup", work)
            print(json.dumps({"warmup": warmup}), flush=True)
        for n in (int(s) for s in args.sizes.split(",")):
            data = work / f"rows-{n}.jsonl"
            write_rows(data, n)
            cache = work / f"cache-{n}"
            for temp in ("cold", "warm"):
                r = train_probe(data, cache, work) if args.first_step else probe(data, cache)
                r.update(rows=n, cache=temp, file_mib=round(data.stat().st_size / 2**20, 1))
                print(json.dumps(r), flush=True)
                results.append(r)
            shutil.rmtree(cache, ignore_errors=True)
            data.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc = {"date": time.strftime("%Y-%m-%d"), "label": args.label,
           "command": "python -m benchmarks.data_scale " + " ".join(sys.argv[1:]),
           "machine": f"{os.cpu_count()} CPU cores (shared), no GPU", "versions": versions(), "results": results}
    if warmup is not None:
        doc["warmup"] = warmup
        doc["torch_extensions_dir"] = os.environ.get("TORCH_EXTENSIONS_DIR", "(default)")
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
