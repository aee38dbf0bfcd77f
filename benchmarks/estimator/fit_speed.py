"""Fit core/estimate/speed.py's coefficients to measured step times (least squares on log time).

    python -m benchmarks.estimator.fit_speed benchmarks/estimator/data/sweep1-raw.jsonl [...]

Measured step time of a row: the median optimizer step after the first (the first pays for CUDA
warm-up and stage 3's trace recording), or the faster of two when only two were timed (sweep 1). Prints the
coefficients to paste into core/estimate/speed.py and each row's residual.
"""
from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.estimator.compare import load  # noqa: E402
from benchmarks.estimator.matrix import llama_config_dict  # noqa: E402
from zerotui.core.model.spec import _llama_family_spec, trainable_params  # noqa: E402
from zerotui.core.plan.schema import plan_from_dict  # noqa: E402
from zerotui.core.estimate.speed import FIXED, H200, SpeedCoefficients, step_time  # noqa: E402

ALL = [f.name for f in dataclasses.fields(SpeedCoefficients)]
FIELDS = [n for n in ALL if n not in FIXED]


def measured_step(r: dict) -> float:
    """Median of the timed steps (after the first) when there are 3 or more, else the faster one."""
    timed = sorted(r["step_times"][1:] or r["step_times"])
    return timed[len(timed) // 2] if len(timed) >= 3 else timed[0]


def prepared(paths: list[str]) -> list[tuple[dict, object, object, int, float]]:
    out = []
    for r in load(paths):
        if r.get("status") != "ok":
            continue
        # Rows recorded before plans had `kernels` ran without Liger's kernels.
        plan = plan_from_dict({"kernels": "none", **r["plan"]})
        spec = _llama_family_spec(r["shape"], llama_config_dict(r["shape"]), "matrix")
        out.append((r, plan, spec, trainable_params(spec, plan), measured_step(r)))
    return out


def residuals(k: SpeedCoefficients, rows) -> np.ndarray:
    return np.array([math.log(step_time(plan, spec, t, 1, k)["total"] / m) for _, plan, spec, t, m in rows])


def nelder_mead(f, x0: np.ndarray, iters: int = 4000, step: float = 0.3) -> np.ndarray:
    n = len(x0)
    pts = [x0] + [x0 + step * np.eye(n)[i] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        centroid = np.mean(pts[:-1], axis=0)
        xr = centroid + (centroid - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = centroid + 2 * (centroid - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (pts[-1] - centroid)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0] + 0.5 * (p - pts[0]) for p in pts]
                vals = [f(p) for p in pts]
    return pts[int(np.argmin(vals))]


def fit(rows) -> SpeedCoefficients:
    base = np.log([getattr(H200, n) for n in FIELDS])

    def coeffs(x: np.ndarray) -> SpeedCoefficients:
        fitted = {n: float(math.exp(v)) for n, v in zip(FIELDS, x)}
        return SpeedCoefficients(**{n: fitted.get(n, getattr(H200, n)) for n in ALL})

    def loss(x: np.ndarray) -> float:
        res = residuals(coeffs(x), rows)
        return float(np.sum(res ** 2))

    x = base
    for _ in range(3):  # restarts: Nelder-Mead stalls on 10 dimensions
        x = nelder_mead(loss, x)
    return coeffs(x)


def main(argv: list[str]) -> int:
    rows = prepared(argv or [str(HERE / "data" / "sweep1-raw.jsonl")])
    before = residuals(H200, rows)
    k = fit(rows)
    after = residuals(k, rows)
    for (r, *_rest, m), a in zip(rows, after):
        print(f"{r['id']:36} measured {m:7.3f} s  model {m * math.exp(a):7.3f} s  {100 * (math.exp(a) - 1):+6.1f}%")
    print(f"rms log error: before {np.sqrt(np.mean(before ** 2)):.3f}, after {np.sqrt(np.mean(after ** 2)):.3f}; "
          f"worst {100 * (math.exp(np.max(np.abs(after))) - 1):.1f}%")
    print("H200 = SpeedCoefficients(" + ", ".join(f"{n}={getattr(k, n):.4g}" for n in ALL) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
