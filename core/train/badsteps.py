"""Runs of bad optimizer steps (non-finite losses, overflowing gradients) and the clean stop they end in.

What DeepSpeed 0.19.8 does with a bad step decides what a checkpoint holds (measured on the tiny model,
``scripts/faults/numerical.py``, results in ``benchmarks/results/faults-numerical.json``):

* ZeRO stages 1-3 check the gradients before every update (``DeepSpeedZeroOptimizer.step``: the
  overflow check for fp16 and bf16, an invalid global norm for fp32) and *skip* the update of a step
  whose gradients are not finite: the weights, optimizer state and LR schedule stay as they were, and
  ``engine.skipped_steps`` counts it. A checkpoint saved inside such a run of skipped steps holds the
  weights from before its first step.
* Stage 0 in fp32 applies the update: one NaN spoils the weights for good (every later loss is NaN).
* fp16 halves its loss scale at each overflow; at the floor (``min_loss_scale``) DeepSpeed's
  ``DynamicLossScaler.update_scale`` raises a bare ``Exception("Current loss scale already at minimum
  ...")``, which would end the run as a crash.

zerotui therefore never saves while the loss is not finite (``TrainLoop._save``), and past
``max_nonfinite`` bad losses in a row, or at the fp16 floor, it stops cleanly (state ``stopped``, no
checkpoint written at the stop) so that ``zerotui resume`` continues from the newest complete
checkpoint, which is from before the first bad step, or from step 0 when none was saved yet.
"""
from __future__ import annotations

from typing import Optional

#: The text of DeepSpeed's exception at the fp16 floor (deepspeed/runtime/fp16/loss_scaler.py).
_FLOOR_TEXT = "loss scale already at minimum"


def is_scale_floor_error(exc: BaseException) -> bool:
    """DeepSpeed's "cannot decrease scale anymore" at the fp16 loss-scale floor."""
    return _FLOOR_TEXT in str(exc)


class OverflowRun:
    """Consecutive optimizer steps DeepSpeed skipped, from its host-side ``skipped_steps`` counter (read
    after ``engine.step()``, which already synchronised to decide the skip: no extra device sync)."""

    def __init__(self, skipped_total: int = 0) -> None:
        self.seen = skipped_total
        self.length = 0
        self.first: Optional[int] = None

    def after_step(self, step: int, skipped_total: int) -> None:
        if skipped_total > self.seen:
            self.length += 1
            if self.length == 1:
                self.first = step
        else:
            self.length, self.first = 0, None
        self.seen = skipped_total


def resume_point(last_saved: Optional[int], first_bad: int) -> str:
    """Where ``zerotui resume`` continues after a stop for bad steps starting at ``first_bad``."""
    if last_saved is None:
        return "no checkpoint was saved yet: `zerotui resume` starts again from step 0"
    if last_saved < first_bad:
        return (f"checkpoint step{last_saved} (before the first bad step) is intact: `zerotui resume` "
                "continues from it")
    return (f"checkpoint step{last_saved} holds the weights from before step {first_bad} (DeepSpeed skipped "
            "every update since): `zerotui resume` continues from it")
