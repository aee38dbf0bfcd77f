"""Numerical faults on the real worker and the real DeepSpeed engine (tiny model, CPU), each at random
steps: fp16 overflow storms (forced, see fault_worker.py) and non-finite losses.

    python scripts/faults/numerical.py [--reps 4] [--seed 0]

Kinds of trial (``--reps`` of each):

* ``fp16_storm``: fp16, ZeRO-2; every gradient overflows from a random step on. Expected: the loss scale
  halves at each step, ``skipped`` counts them, a ``loss_scale_collapse`` alert near the floor, then a
  clean stop (state ``stopped``) naming the checkpoint to resume from; the checkpoints saved inside the
  storm hold identical weights (no update was applied); a resume without the fault continues from the
  newest checkpoint and completes with finite losses.
* ``fp16_burst``: fp16, ZeRO-2, 3-6 overflowing steps then none: the scale drops and recovers
  (loss_scale_window 10), the run completes, no update was applied on the skipped steps.
* ``nan_zero2``: bf16, ZeRO-2, loss NaN from a random step on: DeepSpeed skips those updates; past
  max_nonfinite a clean stop; the newest checkpoint is from before the first bad step; resume completes.
* ``nan_stage0``: fp32, stage 0, one NaN loss at a random step: stage 0 applies it and the weights are
  spoiled (every later loss NaN); past max_nonfinite a clean stop; the newest checkpoint is from before
  the NaN and a resume from it trains with finite losses again.

Writes ``benchmarks/results/faults-numerical.json``.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from zerotui.core.events.stream import as_float, read_all  # noqa: E402
from zerotui.core.plan.presets import load_preset  # noqa: E402

TOTAL = 60


def _plan(**changes):
    base = dict(max_steps=TOTAL, log_interval=1, save_interval=10, keep_checkpoints=10, eval_interval=0,
                max_nonfinite=3, name="numerical")
    return load_preset("tiny-cpu-demo").with_changes(**{**base, **changes})


def _run(runs: Path, plan, fault: str, fp16: bool = False, resume=None):
    env = {"ZEROTUI_FAULT": fault, "ZEROTUI_FAULT_FP16": "1" if fp16 else "0"}
    paths = common.start_with_faults(runs, plan, env, resume_paths=resume)
    fin = common.wait_finished(paths, 600)
    return paths, fin


def _steps(evs):
    return [e for e in evs if e["type"] == "step"]


def _resume_clean(paths, fp16: bool) -> dict:
    """Resume without any fault: must continue from the newest complete checkpoint and complete."""
    before = len(read_all(paths.events))
    ck = common.checkpoint_state(paths)["newest_complete"]
    _, fin = _run(paths.root.parent, None, "", fp16=fp16, resume=paths)
    new = read_all(paths.events)[before:]
    started = next(e for e in new if e["type"] == "run_started")
    losses = [as_float(e["loss"]) for e in _steps(new)]
    return {"resumed_from": started.get("resumed_from"), "expected_from": ck, "state": fin["state"],
            "all_finite": all(x is not None and math.isfinite(x) for x in losses),
            "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None}


def _same_weights(paths, first_bad: int):
    """Whether every checkpoint saved inside the storm holds the same weights (DeepSpeed skipped every
    update since ``first_bad``); None when fewer than two were saved in it."""
    import torch

    from zerotui.core.train.checkpoint import list_checkpoints

    inside = [c for c in list_checkpoints(paths.checkpoints) if c.complete and c.step >= first_bad]
    if len(inside) < 2:
        return None
    states = [torch.load(c.path / "mp_rank_00_model_states.pt", weights_only=False)["module"] for c in inside]
    return all(torch.equal(states[0][k], st[k]) for st in states[1:] for k in states[0])


def trial(kind: str, rng: random.Random, runs: Path) -> dict:
    t0 = time.monotonic()
    out: dict = {"kind": kind}
    if kind == "fp16_storm":
        start = rng.randint(12, 40)
        plan = _plan(precision="fp16", fp16_min_loss_scale=1, max_steps=80)
        paths, fin = _run(runs, plan, f"overflow:{start}-", fp16=True)
        evs = read_all(paths.events)
        steps = _steps(evs)
        scales = [e["loss_scale"] for e in steps if e["step"] >= start]
        alerts = [e for e in evs if e["type"] == "alert" and e["kind"] == "loss_scale_collapse"]
        newest = common.checkpoint_state(paths)["newest_complete"]
        out.update(first_bad=start, state=fin["state"], reason=fin["reason"], stop_step=fin.get("step"),
                   scales_after=scales[:20], skipped_total=steps[-1].get("skipped_total"),
                   collapse_alerts=len(alerts), newest_checkpoint=newest)
        halving = all(b == a / 2 for a, b in zip(scales, scales[1:]))
        out["weights_same_across_storm_checkpoints"] = _same_weights(paths, start)
        out["resume"] = _resume_clean(paths, fp16=True)
        out["ok"] = (fin["state"] == "stopped" and "reached its floor" in fin["reason"] and halving
                     and len(alerts) == 2 and newest is not None and f"checkpoint {newest}" in fin["reason"]
                     and out["weights_same_across_storm_checkpoints"] is not False
                     and out["resume"]["resumed_from"] == newest and out["resume"]["state"] == "completed"
                     and out["resume"]["all_finite"])
    elif kind == "fp16_burst":
        start, n = rng.randint(10, 30), rng.randint(3, 6)
        plan = _plan(precision="fp16", fp16_loss_scale_window=10)
        paths, fin = _run(runs, plan, f"overflow:{start}-{start + n - 1}", fp16=True)
        steps = {e["step"]: e for e in _steps(read_all(paths.events))}
        skipped = [s for s, e in steps.items() if e["skipped"]]
        scale_low = min(e["loss_scale"] for e in steps.values())
        out.update(first_bad=start, bad_steps=n, state=fin["state"], skipped_steps=skipped,
                   scale_min=scale_low, scale_end=steps[TOTAL]["loss_scale"])
        out["ok"] = (fin["state"] == "completed" and skipped == list(range(start, start + n))
                     and scale_low < steps[start - 1]["loss_scale"] and steps[TOTAL]["loss_scale"] > scale_low)
    elif kind in ("nan_zero2", "nan_stage0"):
        start = rng.randint(12, 40)
        if kind == "nan_zero2":
            plan, fault = _plan(precision="bf16", stage=2), f"nan_loss:{start}-"
        else:
            plan, fault = _plan(precision="fp32", stage=0), f"nan_loss:{start}-{start}"
        paths, fin = _run(runs, plan, fault)
        evs = read_all(paths.events)
        steps = {e["step"]: e for e in _steps(evs)}
        newest = common.checkpoint_state(paths)["newest_complete"]
        newest_step = int(newest[4:]) if newest else None
        nan_steps = [s for s, e in steps.items() if as_float(e["loss"]) is None or not math.isfinite(as_float(e["loss"]))]
        alerts = [e for e in evs if e["type"] == "alert" and e["kind"] == "nonfinite_loss"]
        skipped_logs = [e["message"] for e in evs if e["type"] == "log" and "skipped: the last loss" in e["message"]]
        out.update(first_bad=start, state=fin["state"], reason=fin["reason"], stop_step=fin.get("step"),
                   nan_steps=nan_steps, nonfinite_alerts=len(alerts), newest_checkpoint=newest,
                   saves_refused=len(skipped_logs))
        out["resume"] = _resume_clean(paths, fp16=False)
        out["ok"] = (fin["state"] == "stopped" and nan_steps == [start, start + 1, start + 2]
                     and len(alerts) == 3 and newest_step is not None and newest_step < start
                     and out["resume"]["resumed_from"] == newest and out["resume"]["state"] == "completed"
                     and out["resume"]["all_finite"])
    out["seconds"] = round(time.monotonic() - t0, 1)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="fp16_storm,fp16_burst,nan_zero2,nan_stage0")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    note = common.machine_note()
    trials = []
    with tempfile.TemporaryDirectory(prefix="zerotui-numerical-") as tmp:
        for rep in range(args.reps):
            for kind in args.kinds.split(","):
                t = trial(kind, rng, Path(tmp) / f"{kind}-{rep}")
                trials.append(t)
                print(f"{kind} #{rep}: {'ok' if t['ok'] else 'FAILED'} {t}", flush=True)
    by_kind = {}
    for t in trials:
        k = by_kind.setdefault(t["kind"], {"tried": 0, "ok": 0})
        k["tried"] += 1
        k["ok"] += bool(t["ok"])
    out = common.write_result("numerical", {"command": " ".join(["python", *sys.argv]), "machine": note,
                                            "summary": by_kind, "trials": trials})
    print(by_kind, "->", out)
    return 0 if all(t["ok"] for t in trials) else 1


if __name__ == "__main__":
    sys.exit(main())
