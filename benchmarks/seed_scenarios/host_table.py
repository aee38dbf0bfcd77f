"""Host RAM: today's host estimate (`cpu_bytes`, at its peak moment) beside what each seed-scenario run's
processes held, from committed results.

    python -m benchmarks.seed_scenarios.host_table benchmarks/results/seed-scenarios-*.json

The measured figure is the run's resident set (telemetry's ``rss``, the worker and its children, every
2 s), the larger of the training window and the end's checkpoint save. RSS also counts resident file
pages: the model's safetensors while they are mapped to load (a moment, but up to the whole model:
13 GB for a 7B in 16 bits), libraries, and files in /dev/shm, where the harness keeps its models. Those
are not what the run allocated, and the kernel drops the file-backed ones under pressure, so runs that
recorded them (``rss_file``, since 2026-12-07) are judged on RSS less them ("own"); older runs only on
RSS, which errs high. Rows where host RAM is what decides (the optimizer or weights offloaded to the CPU)
are marked; the rule for them is the GPU's: no measured figure more than 3% above the estimate. Exit 1
when a marked row breaks it on a figure without file pages (RSS alone cannot say which side it is on).
Not yet checked on a GPU: whether CUDA's pinned host buffers count as the process's own pages there (if
they counted as shared, "own" would leave them out); the first offload run with ``rss_file`` says.
"""
from __future__ import annotations

import sys

GIB = 2**30


def host_rows(files: list[str]) -> list[dict]:
    from benchmarks.seed_scenarios.table import rows

    out = []
    for r in rows(files):
        if not r["ran"] or not r["host_rss_max"]:
            continue
        own = [v for v in (r.get("host_anon_training"), r.get("host_anon_saving")) if v]
        measured, kind = (max(own), "own") if own else (r["host_rss_max"], "rss")
        offload = "cpu" in (r["plan"].get("offload_optimizer"), r["plan"].get("offload_params"))
        out.append({**r, "host_measured": measured, "host_kind": kind, "offload": offload,
                    "host_error": r["host_est"] / measured - 1})
    return out


def main(argv: list[str]) -> int:
    from benchmarks.seed_scenarios.table import describe

    table = host_rows(argv)
    print("| scenario | plan | estimate GiB (moment) | measured GiB | error | host decides |")
    print("|---|---|---|---|---:|---|")
    bad = []
    for r in sorted(table, key=lambda r: (not r["offload"], r["host_error"])):
        what = "own (RSS less file pages)" if r["host_kind"] == "own" else "RSS"
        print(f"| {r['scenario']} ({r['file'][15:-5]}) | {describe(r['plan'])} | {r['host_est'] / GIB:.2f} "
              f"({r['host_phase']}) | {r['host_measured'] / GIB:.2f} {what} | {r['host_error']:+.1%} | "
              f"{'yes' if r['offload'] else ''} |")
        if r["offload"] and r["host_kind"] == "own" and r["host_error"] < -0.03:
            bad.append(r["scenario"])
    unsplit = sum(1 for r in table if r["offload"] and r["host_kind"] == "rss" and r["host_error"] < -0.03)
    print(f"\n{len(table)} rows; {sum(r['offload'] for r in table)} with the CPU holding the optimizer or weights; "
          f"{unsplit} of them more than 3% under RSS, which includes file pages (not recorded for them)")
    if bad:
        print(f"host RAM above the estimate by more than 3%, file pages left out: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
