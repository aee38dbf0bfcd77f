"""The loss weight where backward makes no large gradient store (calibration.py's
EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT) chosen and judged.

    python -m benchmarks.estimator.crossval_loss_weight            # ~2 min
    python -m benchmarks.estimator.crossval_loss_weight --refit    # also refits the shares per weight (~1 min each)

For each candidate weight the loss bytes of the rows it applies to (loss_holes.loss_hole_weighted: adapters
at ZeRO stages 0-2, and full fine-tunes at ZeRO-1/2 whose offloaded optimizer takes each gradient off the
GPU as it comes; expandable segments) are scaled, and the rows scored as fit_margin.py scores them. The
two sets are scored together and apart (the weight was chosen on adapters, 2026-12-04, tenth session, and
extended to the offloaded optimizer unchanged in the eleventh).
``--refit`` refits the margin's other shares for each candidate on every row (which weight leaves them
where they are). The leave-one-file-out part keeps the other shares at calibration.py's values and, for
each result file with such rows, picks the weight on the other files and judges the file's rows with
it: the weight is judged on rows it was not chosen on, the shares are not, since they were fitted on
every file (crossval_margin.py judges those, with the weight as shipped).
"""
from __future__ import annotations

import sys

import numpy as np

from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.loss_holes import loss_hole_weighted

from benchmarks.estimator import fit_margin as fm
from benchmarks.estimator.margin_rows import all_rows

CANDIDATES = (1.0, 0.8, 0.7, 0.6, 0.5, 0.4)


def with_weight(d: dict[str, np.ndarray], applies: np.ndarray, weight: float) -> dict[str, np.ndarray]:
    """The design with the loss bytes of the rows ``applies`` marks weighted by ``weight`` instead of
    the shipped weight (``sources`` already applied it)."""
    out = {k: v.copy() for k, v in d.items()}
    out["feats"][applies, fm.KEYS.index("loss")] *= weight / cal.EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT  # never 0: a share
    return out


def counts(e: np.ndarray) -> str:
    within = int(((e >= -0.03) & (e <= 0.05)).sum())
    return (f"{within} of {len(e)} within [-3%, +5%], {int((e > 0.05).sum())} over, {int((e < -0.03).sum())} "
            f"under, {e.min() * 100:+.1f}% ... {e.max() * 100:+.1f}%")


def main(argv: list[str]) -> int:
    rows = fm.group(all_rows(), True)
    applies = np.array([loss_hole_weighted(r["job"]) for r in rows])
    files = np.array([r["file"] for r in rows])
    d = fm.design(rows)
    shipped = fm.as_array(fm.shipped(True))[None, :]
    adapters = np.array([r["job"].plan.uses_adapters() for r in rows]) & applies
    print(f"{int(applies.sum())} of {len(rows)} expandable rows have the weight: {int(adapters.sum())} adapters "
          f"(ZeRO-0 to 2), {int((applies & ~adapters).sum())} full fine-tunes with the optimizer offloaded")
    print("\nall rows, the other shares as shipped:")
    for w in CANDIDATES:
        e = fm.errors(with_weight(d, applies, w), shipped)[0]
        print(f"  weight {w}: all rows {counts(e)}; adapters {counts(e[adapters])}; "
              f"offloaded {counts(e[applies & ~adapters])}")
    if "--refit" in argv:
        print("\nall rows, the shares refitted for each weight:")
        for w in CANDIDATES:
            dw = with_weight(d, applies, w)
            cands = fm.grid(True)
            s = np.concatenate([fm.score(fm.errors(dw, cands[i:i + fm.CHUNK]))
                                for i in range(0, len(cands), fm.CHUNK)])
            best = cands[int(np.argmin(s))]
            print(f"  weight {w}: {fm.readable(dict(zip(fm.KEYS, best.tolist())))}, "
                  f"{counts(fm.errors(dw, best[None, :])[0])}")
    print("\nthe weight held out, one file at a time (chosen on the other files; the other shares as shipped,"
          " which were fitted on every file):")
    held: list[float] = []
    for f in sorted(set(files[applies])):
        rest = files != f
        scores = [fm.score(fm.errors(with_weight(d, applies, w), shipped)[:, rest])[0] for w in CANDIDATES]
        w = CANDIDATES[int(np.argmin(scores))]  # ties: the first, the larger weight (the safe side)
        e = fm.errors(with_weight(d, applies, w), shipped)[0]
        mine = (files == f) & applies
        held += e[mine].tolist()
        print(f"  {f}: weight {w} -> " + ", ".join(f"{rows[i]['id']} {e[i] * 100:+.1f}%"
                                                     for i in np.flatnonzero(mine)))
    print(f"the weight held out: {counts(np.array(held))}")
    offloaded = applies & ~adapters
    scores = [fm.score(fm.errors(with_weight(d, applies, w), shipped)[:, ~offloaded])[0] for w in CANDIDATES]
    w = CANDIDATES[int(np.argmin(scores))]
    e = fm.errors(with_weight(d, applies, w), shipped)[0]
    print(f"\nthe offloaded rows held out together: weight {w} chosen without them -> {counts(e[offloaded])}; "
          f"with the weight 1: {counts(fm.errors(with_weight(d, offloaded, 1.0), shipped)[0][offloaded])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
