"""The margin table: every committed measured row, the estimator's parts and what the allocator held.

    python -m benchmarks.estimator.margin_table            # markdown table, then the errors per source

Columns (GiB): measured allocated and the estimate's; reserved - allocated measured; the margin's terms
(core/estimate/margin.py); NVML - reserved (the CUDA context, where NVML saw the run alone); the total
error: (allocated estimate + margin + CUDA context) against NVML, or against reserved + the assumed
context where NVML also counted a model-building process. Rows come from margin_rows.py.
"""
from __future__ import annotations

import sys

from benchmarks.estimator.margin_rows import GIB, all_rows

TERMS = ("base", "loss", "recompute", "gather", "gradients", "first step")


def measured_total(r: dict) -> float:
    return r["nvml"] or r["reserved"] + r["context"]


def estimated(alloc: float, margin: float, context: float, cap: float) -> float:
    """The total the estimate predicts a run to reach: allocated + margin + CUDA context, or, where that is
    over the run's cap and the allocation is not, the allocation and the context alone. Under a cap, with
    expandable segments, a pool that would grow past it hands its free pages back to the driver and
    retries (PyTorch's release-and-retry) rather than fail, and what it then holds is what is live: the two
    runs that released (2026-12-06) held 0.06 and 0.08 GiB beyond allocated (1b-full-ho23 under 26 GiB,
    24.81 GiB in all where it held 28.80 under 40; 3b-full-ho84 under 80). docs/estimator.md, "The cap
    and the allocator's release"."""
    total = alloc + margin + context
    return total if total <= cap else min(cap, alloc + context)


def total_error(r: dict) -> float:
    return estimated(r["allocated_est"], r["margin_est"], r["context"], r["cap"]) / measured_total(r) - 1


def summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    out = {}
    for name in sorted({r["source"] for r in rows}):
        errs = [total_error(r) for r in rows if r["source"] == name]
        out[name] = {"rows": len(errs), "worst_under": min(errs), "worst_over": max(errs),
                     "outside_-3_+5": sum(1 for e in errs if e < -0.03 or e > 0.05)}
    return out


def main(argv: list[str]) -> int:
    rows = all_rows()
    g = lambda v: f"{v / GIB:.2f}"
    print("| row | source | alloc | alloc est | reserved − alloc | margin | " + " | ".join(TERMS)
          + " | NVML − reserved | phase | total error |")
    print("|---|---|" + "---:|" * (5 + len(TERMS)) + "---|---:|")
    for r in rows:
        ctx = g(r["nvml"] - r["reserved"]) if r["nvml"] else "-"
        terms = " | ".join(g(r["margin_terms"].get(t, 0.0)) for t in TERMS)
        print(f"| {r['id']} | {r['source']} | {g(r['allocated'])} | {g(r['allocated_est'])} | "
              f"{g(r['reserved'] - r['allocated'])} | {g(r['margin_est'])} | {terms} | {ctx} | {r['phase']} | "
              f"{total_error(r):+.1%} |")
    print()
    for name, s in summary(rows).items():
        print(f"{name}: {s['rows']} rows, total error {s['worst_under']:+.1%} … {s['worst_over']:+.1%}, "
              f"{s['outside_-3_+5']} outside [−3%, +5%]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
