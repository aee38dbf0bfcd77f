"""Host RAM: today's host estimate (`cpu_bytes`, at its peak moment) beside what each seed-scenario run's
processes held, from committed results.

    python -m benchmarks.seed_scenarios.host_table benchmarks/results/seed-scenarios-*.json

The measured figure is the run's resident set (telemetry's ``rss``, the worker and its children, every
2 s), the larger of the training window and the end's checkpoint save. RSS also counts resident file
pages: the model's safetensors while they are mapped to load (a moment, but up to the whole model:
13 GB for a 7B in 16 bits), libraries, and files in /dev/shm, where the harness keeps its models. Those
are not what the run allocated, and the kernel drops the file-backed ones under pressure, so runs that
recorded them (``rss_file``, since 2026-12-07) are judged on RSS less them ("own"); older runs only on
RSS, which errs high.

Except where the CPU holds the optimizer or the weights: there CUDA's pinned host buffers count among the
shared pages too (measured on the H200, seed-scenarios-rssfile-h200-2026-12-07.json: 1b-full-oga1 held
33.2 GiB RSS of which 20.7 shared, with 2 GiB of model file; the estimate's 32.3 is the whole RSS, -2.9%),
so "own" would leave out memory the kernel can never drop. Those rows are judged on RSS, which can only
err high. Since then telemetry's ``rss_file`` counts only the pages of mapped regular files
(core/hardware/file_pages.py) and the harness records RSS less them as ``host_rss_own_max_*``: rows that
have it are judged on it, offload or not. Rows where host RAM decides (the optimizer or weights on the CPU)
are marked; the rule is the GPU's, no measured figure more than 3% above the estimate. Exit 1 when a
marked row breaks it.
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
        offload = "cpu" in (r["plan"].get("offload_optimizer"), r["plan"].get("offload_params"))
        # RSS less the pages of mapped files, where recorded (every row); else RSS less Linux's shared pages
        # (2026-12-07's runs), which hold the pinned buffers with offload (module docstring): RSS there
        own = [v for v in (r.get("host_own_training"), r.get("host_own_saving")) if v]
        if not own and not offload:
            own = [v for v in (r.get("host_anon_training"), r.get("host_anon_saving")) if v]
        measured, kind = (max(own), "own") if own else (r["host_rss_max"], "rss")
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
        if r["offload"] and r["host_error"] < -0.03:
            bad.append(r["scenario"])
    offload = [r for r in table if r["offload"]]
    on_rss = sum(r["host_kind"] == "rss" for r in offload)
    print(f"\n{len(table)} rows; {len(offload)} with the CPU holding the optimizer or weights ({on_rss} judged on RSS, "
          f"which may count file pages; {len(offload) - on_rss} on RSS less them); {len(bad)} more than 3% over "
          "the estimate")
    if bad:
        print(f"host RAM above the estimate by more than 3%: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
