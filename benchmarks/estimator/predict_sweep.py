"""Write down what the estimator says a sweep's rows will hold on the H200 before they run, so the
measurement can be judged against a prediction it could not have shaped (the seed scenarios' twin:
benchmarks/seed_scenarios/predict.py). Runs anywhere: the shapes are config dictionaries.

    python -m benchmarks.estimator.predict_sweep --alloc-conf expandable_segments:True sweep1 sweep2

One line per configuration: the allocated peak, the fragmentation margin, the CUDA context and their sum
(what NVML should read at the peak; margin_table.total_error compares the same sum), in GiB.

    python -m benchmarks.estimator.predict_sweep --score benchmarks/results/estimator-sweep-expandable-predictions-2026-12-03.txt \
        benchmarks/estimator/data/sweep1-expandable-raw.jsonl benchmarks/estimator/data/sweep2-expandable-raw.jsonl

scores such a file, once the rows have run, against what they measured (NVML's peak), each part apart.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from benchmarks.estimator.margin_rows import GIB, components
from benchmarks.estimator.matrix import SWEEPS, spec_for
from zerotui.core.estimate.margin import first_step_share, room_holes


LINE = re.compile(r"(sweep\d) (\S+)\s+([\d.]+) \+\s+([\d.]+) \+\s+([\d.]+) =\s+([\d.]+)")


def score(predictions: Path, raws: list[Path]) -> int:
    """Each measured row against the line written for it before it ran."""
    pred = {m.group(2): tuple(map(float, m.groups()[2:])) for m in map(LINE.match, predictions.read_text().splitlines()) if m}
    errors = []
    for raw in raws:
        for line in raw.read_text().splitlines():
            r = json.loads(line)
            if r.get("status") != "ok" or r["id"] not in pred:
                continue
            alloc, margin, context, total = pred[r["id"]]
            measured = r["nvml_used_peak"] / GIB
            errors.append(total / measured - 1)
            print(f"{r['id']:28s} predicted {total:7.2f} measured {measured:7.2f} {errors[-1]:+6.1%}   allocated "
                  f"{alloc:6.2f} vs {r['peak_allocated'] / GIB:6.2f}, margin {margin:5.2f} vs "
                  f"{(r['peak_reserved'] - r['peak_allocated']) / GIB:5.2f}, context {context:4.2f} vs "
                  f"{(r['nvml_used_peak'] - r['peak_reserved']) / GIB:4.2f}{_step0_growth(r)}")
    if errors:
        print(f"{len(errors)} rows: {min(errors):+.1%} … {max(errors):+.1%}; "
              f"{sum(-0.03 <= e <= 0.05 for e in errors)} within [−3%, +5%], {sum(e < -0.03 for e in errors)} below −3%")
    return 0


def _first_step(c: dict) -> str:
    """Where the first step's segment is a question (margin.first_step_term): what the step creates as a
    share of what step 0 freed, and the estimator's answer."""
    first = c["margin_sources"]["first step"]
    if not first or not c["job"].expandable:
        return ""
    share = first_step_share(c["step_room"], c["step_new"], room_holes(c["margin_terms"]))
    return f"   first step: {share:.2f} of step 0's room, " + ("fits" if not c["margin_terms"]["first step"]
                                                               else f"grows the segment ({first / GIB:.2f} GiB)")


def _step0_growth(r: dict) -> str:
    """What step 0's optimizer step added to the reserved pool, where the row has per-phase figures."""
    first = [m for m in r.get("micro_steps", []) if m["step"] == 0]
    if not first:
        return ""
    before = max(max(m["fwd_reserved"], m["bwd_reserved"]) for m in first)
    return f", step 0 grew the pool {(first[-1]['step_reserved'] - before) / GIB:5.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+", help="sweep names, or with --score the raw JSONL files")
    ap.add_argument("--alloc-conf", default="", help="PYTORCH_CUDA_ALLOC_CONF the rows will run with")
    ap.add_argument("--score", type=Path, help="a predictions file this command wrote before the rows ran")
    a = ap.parse_args()
    if a.score:
        return score(a.score, [Path(x) for x in a.sweeps])
    unknown = [x for x in a.sweeps if x not in SWEEPS]
    if unknown:
        ap.error(f"unknown sweep {', '.join(unknown)}: one of {', '.join(sorted(SWEEPS))}")
    print(f"allocator: {a.alloc_conf or 'default'}; GiB: allocated + margin + context = total")
    for name in a.sweeps:
        for cfg in SWEEPS[name]:
            spec = spec_for(cfg.shape)
            c = components(cfg.plan_fields(), spec, a.alloc_conf, saves=False)  # the harness never saves
            total = c["allocated_est"] + c["margin_est"] + c["context"]
            print(f"{name} {cfg.id:30s} {c['allocated_est'] / GIB:7.2f} + {c['margin_est'] / GIB:5.2f} + "
                  f"{c['context'] / GIB:4.2f} = {total / GIB:7.2f}{_first_step(c)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
