"""Peak anonymous RSS of each stage of ``prepare_data`` (open, tokenise, mix, split + select, write).

    python -m benchmarks.data_stages DATA.jsonl [--keep-tokenised]

Runs ``prepare_data`` on the tiny tokenizer (seq_len 256) in this process with ZEROTUI_CACHE_DIR as it
is. A thread samples ``RssAnon`` from /proc/self/status every 20 ms and books it to the stage running
then; the stages are marked by wrapping the module functions ``_assemble`` looks up (``open_source``,
``tokenise_source``, ``mix``, ``_split``, ``write_store``), so it measures any checkout's prepare.py
unchanged. ``--keep-tokenised`` first deletes only the assembled sets (``set-*``) of the cache, so a
second run measures mix / split / write again without tokenising a million rows again. Prints one JSON
line: MiB per stage, ru_maxrss, seconds per stage.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import threading
import time

STAGES = {"open_source": "open", "tokenise_source": "tokenise", "mix": "mix", "_split": "split+select",
          "write_store": "write"}


def anon_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--keep-tokenised", action="store_true")
    args = ap.parse_args()
    now = ["imports"]
    peaks: dict[str, int] = {}
    seconds: dict[str, float] = {}
    started = [time.perf_counter()]

    def book() -> None:
        peaks[now[0]] = max(peaks.get(now[0], 0), anon_bytes())

    def enter(stage: str) -> None:
        book()
        t = time.perf_counter()
        seconds[now[0]] = seconds.get(now[0], 0.0) + t - started[0]
        now[0], started[0] = stage, t

    def watch() -> None:
        while True:
            book()
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()
    from zerotui.core.data import prepare
    from zerotui.core.model.tiny import tiny_tokenizer
    from zerotui.core.plan.schema import Plan

    def marked(name: str, fn):
        def run(*a, **kw):
            enter(STAGES[name])
            return fn(*a, **kw)
        return run

    for name in STAGES:
        setattr(prepare, name, marked(name, getattr(prepare, name)))
    if args.keep_tokenised:
        for old in prepare.cache_dir().glob("set-*"):
            shutil.rmtree(old)
    plan = Plan(data=args.data, seq_len=256, micro_batch=4)
    tokenizer = tiny_tokenizer()
    enter("fingerprint")
    data = prepare.prepare_data(plan, tokenizer)
    enter("done")
    print(json.dumps({"rows": data.report.rows_read, "cache": data.report.cache,
                      "peak_anon_mib": {k: round(v / 2**20, 1) for k, v in peaks.items()},
                      "ru_maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "seconds": {k: round(v, 2) for k, v in seconds.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
