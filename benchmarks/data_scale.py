"""Host memory and time to the first batch as the training data grows: 10k, 100k and 1M JSONL rows.

    python -m benchmarks.data_scale OUT.json [--sizes 10000,100000,1000000] [--label after]

For each size it writes an alpaca JSONL file (generated here, seeded), then runs ``prepare_data`` on the
tiny model's tokenizer in a fresh process twice: with an empty cache (cold) and again with the cache the
first one left (warm). Each process reports the seconds from start to the first collated micro-batch,
its peak RSS (``ru_maxrss``: file-backed pages of memory-mapped data count here too) and its peak
anonymous RSS (``RssAnon``, sampled every 20 ms: the memory that cannot be paged back to the file).
Run it against another checkout (PYTHONPATH) to compare before/after a change.
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


def versions() -> dict:
    import datasets
    import pyarrow
    import torch
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "datasets": datasets.__version__,
            "pyarrow": pyarrow.__version__, "transformers": transformers.__version__}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--label", default="after")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zerotui-datascale-"))
    results = []
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            data = work / f"rows-{n}.jsonl"
            write_rows(data, n)
            cache = work / f"cache-{n}"
            for temp in ("cold", "warm"):
                r = probe(data, cache)
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
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
