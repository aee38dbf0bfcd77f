"""Fit the margin's five constants to committed rows by a grid search.

    python -m benchmarks.estimator.fit_margin      # fit on every committed row, print the constants (~5 s)

The features are the bytes each source churns (core/estimate/margin.py ``sources``, as the estimator
computes them for each row's plan) and ``errors`` combines them as ``margin.combine`` does: base +
the larger of loss and gather + recompute + gradients + a share of the first-step segment (1 on the
default allocator, not fitted; with expandable segments fitted, on the smaller of the copy and what
the step's new tensors exceed the room by: margin.first_step_term), raised to
the ZeRO-3 long-sequence floor where that applies (not fitted), plus allocated and the CUDA context.
The grid picks the constants by ``score``: safety first (rows more than 3% short, then how far the
worst row is below ``SAFE_UNDER``), then the fewest rows outside [−3%, +5%], then the narrowest band
around +1%; where the rows leave a constant undecided it takes the largest. crossval_margin.py judges
this procedure out of sample (leave one result file out); the constants fitted here on all rows are
the ones calibration.py holds.
"""
from __future__ import annotations

import itertools
import json
import sys

import numpy as np

from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.margin import (
    FREED_LOGITS,
    copy_in_loss_blocks,
    fp16_offload_guard,
    offload_norm_block,
    step_free,
    step_hole,
    zero3_long_sequence_floor,
)
from zerotui.core.estimate.step_copy import copy_on_forward_pool

from benchmarks.estimator.margin_rows import GIB, all_rows
from benchmarks.estimator.margin_table import measured_total

CONSTANTS = {"base": ("FRAGMENTATION_BASE_BYTES", [int(x / 10 * GIB) for x in range(9)]),
             "loss": ("FRAGMENTATION_LOSS_SHARE", [x / 20 for x in range(4, 15)]),
             "recompute": ("FRAGMENTATION_RECOMPUTE_SHARE", [x / 20 for x in range(13)]),
             "gather": ("FRAGMENTATION_GATHER_SHARE", [0, 0.25, 0.5, 0.75, 1.0]),
             "gradients": ("FRAGMENTATION_GRADIENT_SHARE", [x / 4 for x in range(9)]),
             "first step": ("FRAGMENTATION_FIRST_STEP_SHARE", [1.0])}
#: A fitted row closer to −3% than this counts against the constants: the fit keeps a cushion on the
#: dangerous side, because rows it has not seen scatter around it.
SAFE_UNDER = -0.02
KEYS = list(CONSTANTS)
#: With expandable segments: calibration.py's EXPANDABLE_* names, the loss share's grid reaching down to 0
#: (the rows hold far less than on the default allocator).
EXPANDABLE = {"base": ("EXPANDABLE_BASE_BYTES", CONSTANTS["base"][1]),
              "loss": ("EXPANDABLE_LOSS_SHARE", [x / 20 for x in range(15)]),
              "recompute": ("EXPANDABLE_RECOMPUTE_SHARE", CONSTANTS["recompute"][1]),
              "gather": ("EXPANDABLE_GATHER_SHARE", CONSTANTS["gather"][1]),
              "gradients": ("EXPANDABLE_GRADIENT_SHARE", CONSTANTS["gradients"][1]),
              "first step": ("EXPANDABLE_FIRST_STEP_SHARE", [x / 20 for x in range(21)])}
#: Candidates scored at a time: the expandable grid (1.66M sets) against every row would not fit in memory.
CHUNK = 50_000


def constants(expandable: bool) -> dict[str, tuple[str, list]]:
    return EXPANDABLE if expandable else CONSTANTS


def group(rows: list[dict], expandable: bool) -> list[dict]:
    """The rows measured on one allocator: each allocator has its own constants."""
    return [r for r in rows if r["job"].expandable is expandable]


def design(rows: list[dict]) -> dict[str, np.ndarray]:
    """Per row: the sources (one column per constant, base's is 1; the last is the first-step segment),
    the floor's share of allocated where it applies, allocated and the measured total."""
    feats = np.array([[1.0] + [r["margin_sources"][k] for k in list(CONSTANTS)[1:]] for r in rows])
    floor = np.array([zero3_long_sequence_floor(r["job"], r["allocated_est"], 0.0) for r in rows])
    # margin.step_free: what the pool has free at the step, off the copy the segment can grow by
    free = [step_free(r["job"], r["allocated_est"], r["moments"].get("step", np.inf)) for r in rows]
    return {"feats": feats, "floor": floor, "alloc": np.array([r["allocated_est"] for r in rows]),
            # margin.first_step_term: expandable rows whose first step fits in what step 0 freed
            "expandable": np.array([r["job"].expandable for r in rows], dtype=bool),
            "room": np.array([r["step_room"] for r in rows]), "new": np.array([r["step_new"] for r in rows]),
            "free": np.array(free),
            # margin.copy_in_loss_blocks: the copy fits where the loss's blocks were (no first-step term)
            "in_loss": np.array([copy_in_loss_blocks(r["job"], r["margin_sources"]["loss"], r["margin_sources"]["first step"], f)
                                 for r, f in zip(rows, free)], dtype=bool),
            "context": np.array([r["context"] for r in rows], dtype=float),
            "cap": np.array([r["cap"] for r in rows], dtype=float),  # margin_table.estimated
            # the margin's unfitted terms, added as they are: the fp16 offload guard and the fp64 norm block
            "fixed": np.array([fp16_offload_guard(r["job"]) + offload_norm_block(r["job"]) for r in rows]),
            # margin.loss_room: the free region the loss's blocks are served from, off the loss's holes
            "loss_room": np.array([r["margin_sources"].get("loss room", 0.0) for r in rows]),
            "freed_logits": np.array([r["margin_sources"].get(FREED_LOGITS, 0.0) for r in rows]),
            "measured": np.array([measured_total(r) for r in rows], dtype=float),
            # margin.step_moment_term: the step's moment (its allocation plus the hole), NaN where it has none,
            # and whether the step is the peak of allocation (then that moment alone sets reserved)
            "step": np.array([r["moments"]["step"] + step_hole(r["job"]) if step_hole(r["job"]) else np.nan
                              for r in rows]),
            "step_peak": np.array([bool(step_hole(r["job"])) and r["phase"] == "step" for r in rows], dtype=bool),
            # offload12.init_floor: initialisation's pool and the norm's block beyond allocated, -inf where none
            "pool": np.array([_pool(r) for r in rows]),
            # step_copy.copy_on_forward_pool beyond allocated, -inf where it does not apply
            "copy_pool": np.array([(copy_on_forward_pool(r["job"], r["moments"]) or -np.inf) - r["allocated_est"]
                                   for r in rows])}


def _pool(r: dict) -> float:
    from zerotui.core.estimate import calibration
    from zerotui.core.estimate.offload12 import init_reserved

    pool = init_reserved(r["job"], calibration.CUDA_CONTEXT_BYTES)
    return pool + offload_norm_block(r["job"]) - r["allocated_est"] if pool else -np.inf


def grid(expandable: bool = False) -> np.ndarray:
    # largest values first: where the rows leave a constant undecided (equal scores), argmin takes the
    # largest, the safe side
    return np.array(list(itertools.product(*(sorted(g, reverse=True) for _, g in constants(expandable).values()))),
                    dtype=float)


def margins(d: dict[str, np.ndarray], consts: np.ndarray, overlap: bool = True) -> np.ndarray:
    """The margin of each row (columns) under each set of constants (rows): margin.combine, vectorised.
    ``overlap=False``: loss and gather added, as the margin had them before 2026-12-02 (for comparison)."""
    c = np.atleast_2d(consts)
    f = d["feats"]
    share = lambda k: np.outer(c[:, KEYS.index(k)], f[:, KEYS.index(k)])  # noqa: E731
    full = share("loss") + d["freed_logits"]  # loss_holes.freed_logits: held as they are, no share
    loss = np.maximum(full - d["loss_room"], 0.0)
    loss_gather = np.maximum(loss, share("gather")) if overlap else loss + share("gather")
    # margin.loss_room_used: what the room took off goes back into the first step's holes
    returned = (np.maximum(full, share("gather")) if overlap else full + share("gather")) - loss_gather
    m = share("base") + loss_gather + share("recompute") + share("gradients")
    # margin.first_step_term over arrays: the holes are every term but the first step (room_holes); with
    # expandable segments the share applies to the smaller of the copy and what the step's new tensors
    # exceed the room by (0 where they fit)
    excess = np.maximum(d["new"] - cal.EXPANDABLE_FIRST_STEP_ROOM_SHARE * (d["room"] + m + returned), 0.0)
    copy = d["feats"][:, KEYS.index("first step")]
    first = np.where(d["expandable"], np.minimum(np.minimum(copy, excess), np.maximum(copy - d["free"], 0.0)), copy)
    first = np.where(d["in_loss"], 0.0, first)
    m = np.maximum(m + c[:, [KEYS.index("first step")]] * first + d["fixed"], d["floor"])
    step = np.nan_to_num(d["step"] - d["alloc"], nan=-np.inf)  # margin.step_moment_term over arrays
    return np.maximum(np.maximum(np.where(d["step_peak"], step, np.maximum(m, step)), d["pool"]), d["copy_pool"])


def errors(d: dict[str, np.ndarray], consts: np.ndarray, overlap: bool = True) -> np.ndarray:
    """Relative error of the total (allocated + margin + context; over the run's cap, allocated + context:
    margin_table.estimated) against the measured one."""
    total = d["alloc"] + margins(d, consts, overlap) + d["context"]
    released = np.minimum(d["cap"], d["alloc"] + d["context"])
    return np.where(total <= d["cap"], total, released) / d["measured"] - 1


def score(e: np.ndarray) -> np.ndarray:
    """Lower is better; one value per set of constants (rows of ``e``)."""
    short = (e < -0.03).sum(axis=1)
    outside = ((e < -0.03) | (e > 0.05)).sum(axis=1)
    band = np.maximum(e.max(axis=1) - 0.01, 0.01 - e.min(axis=1))
    cushion = np.maximum(0.0, SAFE_UNDER - e.min(axis=1))
    return 100 * short + 10 * cushion + outside + band


def fit(rows: list[dict], overlap: bool = True, expandable: bool = False) -> tuple[dict[str, float], float]:
    """The constants for one allocator's rows (``group``)."""
    candidates = grid(expandable)
    d = design(rows)
    s = np.concatenate([score(errors(d, candidates[i:i + CHUNK], overlap))
                        for i in range(0, len(candidates), CHUNK)])
    i = int(np.argmin(s))
    return dict(zip(CONSTANTS, candidates[i].tolist())), float(s[i])


def shipped(expandable: bool = False) -> dict[str, float]:
    """The constants calibration.py holds now for one allocator."""
    return {k: float(getattr(cal, name)) for k, (name, _) in constants(expandable).items()}


def as_array(c: dict[str, float]) -> np.ndarray:
    return np.array([c[k] for k in CONSTANTS], dtype=float)


def readable(c: dict[str, float]) -> dict[str, float]:
    return {k: round(v / GIB, 3) if k == "base" else v for k, v in c.items()}


def main(argv: list[str]) -> int:
    every = all_rows()
    for expandable in (False, True):
        rows = group(every, expandable)
        c, s = fit(rows, expandable=expandable)
        e = errors(design(rows), as_array(c))[0]
        print("expandable segments:" if expandable else "PyTorch's default allocator:")
        print("  fitted on all", len(rows), "rows:", json.dumps(readable(c)), f"(score {s:.3f})")
        print("  in calibration.py:", json.dumps(readable(shipped(expandable))))
        print(f"  in sample: {e.min():+.1%} … {e.max():+.1%}, {int(((e < -0.03) | (e > 0.05)).sum())} outside [−3%, +5%]")
        drift = np.abs(margins(design(rows), as_array(shipped(expandable)))[0] - [r["margin_est"] for r in rows]).max()
        print(f"  this module's margin with calibration.py's constants vs the estimator's: {drift:.0f} bytes apart at most")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
