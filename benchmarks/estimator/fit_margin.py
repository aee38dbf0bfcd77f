"""Fit the margin's five constants on one set of committed rows and report them on the other.

    python -m benchmarks.estimator.fit_margin               # grid search on the "fit" rows (slow: ~30 s)

Features are the margin's own terms (core/estimate/margin.py) divided by today's constants, so the fit
scores exactly what the estimator computes. The grid picks the constants with the fewest fit rows outside
[−3%, +5%] of the measured total, then the narrowest band around +1%, with a penalty below −2.5% (the
dangerous side). "first step" has no constant. The check rows are only reported, never used.
"""
from __future__ import annotations

import itertools
import sys

from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.calibration import CUDA_CONTEXT_BYTES

from benchmarks.estimator.margin_rows import GIB, all_rows
from benchmarks.estimator.margin_table import measured_total

CONSTANTS = {"base": ("FRAGMENTATION_BASE_BYTES", [x / 10 * GIB for x in range(9)]),
             "loss": ("FRAGMENTATION_LOSS_SHARE", [x / 20 for x in range(4, 15)]),
             "recompute": ("FRAGMENTATION_RECOMPUTE_SHARE", [x / 20 for x in range(13)]),
             "gather": ("FRAGMENTATION_GATHER_SHARE", [0, 0.25, 0.5, 0.75, 1.0]),
             "gradients": ("FRAGMENTATION_GRADIENT_SHARE", [x / 4 for x in range(9)])}


def features(r: dict) -> dict[str, float]:
    t = r["margin_terms"]
    f = {k: t[k] / getattr(cal, name) for k, (name, _) in CONSTANTS.items()}
    f["first step"] = t["first step"]
    return f


def errors(rows: list[dict], c: dict[str, float]) -> list[float]:
    out = []
    for r in rows:
        m = r["f"]["first step"] + sum(c[k] * r["f"][k] for k in CONSTANTS)
        out.append((r["allocated_est"] + m + CUDA_CONTEXT_BYTES) / measured_total(r) - 1)
    return out


def score(e: list[float]) -> float:
    outside = sum(1 for x in e if x < -0.03 or x > 0.05)
    return outside + max(max(e) - 0.01, 0.01 - min(e)) + 10 * max(0.0, -0.025 - min(e))


def fit(rows: list[dict]) -> tuple[dict[str, float], float]:
    best: tuple[float, dict[str, float]] | None = None
    for values in itertools.product(*(grid for _, grid in CONSTANTS.values())):
        c = dict(zip(CONSTANTS, values))
        s = score(errors(rows, c))
        if best is None or s < best[0]:
            best = (s, c)
    assert best is not None
    return best[1], best[0]


def main(argv: list[str]) -> int:
    rows = all_rows()
    for r in rows:
        r["f"] = features(r)
    train = [r for r in rows if r["set"] == "fit"]
    check = [r for r in rows if r["set"] == "check"]
    c, s = fit(train)
    print("fitted:", {k: (v / GIB if k == "base" else v) for k, v in c.items()}, f"score {s:.3f}")
    print("in calibration.py:", {k: getattr(cal, name) / (GIB if k == "base" else 1) for k, (name, _) in CONSTANTS.items()})
    for name, part in (("fit", train), ("check", check)):
        e = errors(part, c)
        print(f"{name}: {len(e)} rows, {min(e):+.1%} … {max(e):+.1%}, "
              f"{sum(1 for x in e if x < -0.03 or x > 0.05)} outside [−3%, +5%]")
        for r, x in zip(part, e):
            print(f"    {r['id']:40} {x:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
