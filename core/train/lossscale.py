"""The live fp16 loss scale, read defensively, and the alert when it collapses toward its minimum.

Where the scale lives differs across DeepSpeed's optimizers and versions; checked against the installed
0.19.8:

- ZeRO stages 1-2 (``DeepSpeedZeroOptimizer``) and 3 (``DeepSpeedZeroOptimizer_Stage3``): properties
  ``loss_scale`` / ``cur_scale`` that read ``loss_scaler.cur_scale``;
- the stage-0 ``FP16_Optimizer``: ``loss_scale_config.cur_scale`` since 0.18.6 (``cur_scale`` before);
- bf16 and fp32 training: no scale at all (None).

``engine.loss_scale()`` returns the *configured* value (0 for dynamic), not the live one: never used.
"""
from __future__ import annotations

import math
from typing import Any, Optional

# Looked up in this order; the first finite positive number wins.
_PATHS = (("loss_scale_config", "cur_scale"), ("cur_scale",), ("loss_scaler", "cur_scale"),
          ("loss_scale",), ("optimizer", "loss_scale_config", "cur_scale"), ("optimizer", "cur_scale"))


def live_loss_scale(optimizer: Any, precision: str) -> Optional[float]:
    """The scale the next backward will use, or None (not fp16, or not found)."""
    if precision != "fp16" or optimizer is None:
        return None
    for path in _PATHS:
        obj = optimizer
        try:
            for name in path:
                obj = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a property may raise on a half-built optimizer
            continue
        if callable(obj):
            continue
        try:
            value = float(obj)
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and value > 0:
            return value
    return None


def loss_scale_is_dynamic(optimizer: Any, precision: str) -> Optional[bool]:
    """Whether the live scale moves on overflow (True), is fixed (False), or there is none (None).

    ZeRO optimizers hold a ``loss_scaler`` (``DynamicLossScaler`` or the static ``LossScaler``, each with a
    ``dynamic`` flag, deepspeed/runtime/fp16/loss_scaler.py); stage 0's ``FP16_Optimizer`` says it in
    ``dynamic_loss_scale`` before 0.18.6 and in ``loss_scale_config.dynamic_loss_scale`` since (0.19.8's
    stage-0 runs read None here until 2026-12-06)."""
    if precision != "fp16" or optimizer is None:
        return None
    for path in (("loss_scaler", "dynamic"), ("dynamic_loss_scale",), ("optimizer", "loss_scaler", "dynamic"),
                 ("loss_scale_config", "dynamic_loss_scale")):
        obj = optimizer
        try:
            for name in path:
                obj = getattr(obj, name)
        except Exception:  # noqa: BLE001 - as above
            continue
        if isinstance(obj, bool):
            return obj
    return None


class ScaleWatch:
    """Alerts when a dynamic fp16 loss scale has fallen from where it started to within ``margin``
    halvings of its floor; again only after it has recovered (to 16× the floor), so a run that sits at the
    floor does not repeat the alert each log. A static scale never moves, so it is never a collapse."""

    def __init__(self, min_scale: float, initial: float, margin: int = 2) -> None:
        self.floor = float(min_scale)
        self.initial = float(initial)
        self.limit = self.floor * (2 ** margin)
        self.alerted = False
        self.skipped = 0  # overflow-skipped steps since the last alert was armed

    def check(self, scale: Optional[float], skipped_in_interval: int = 0,
              dynamic: Optional[bool] = True) -> Optional[dict]:
        if scale is None or dynamic is False:
            return None
        self.skipped += skipped_in_interval
        if self.alerted and scale >= self.floor * 16:
            self.alerted, self.skipped = False, skipped_in_interval
        if self.alerted or scale > self.limit or scale >= self.initial:
            return None
        self.alerted = True
        return {
            "kind": "loss_scale_collapse",
            "message": f"fp16 loss scale fell from {self.initial:g} to {scale:g} (floor {self.floor:g}): "
                       f"gradients keep overflowing; {self.skipped} optimizer step(s) skipped",
            "hint": "use --precision bf16 if the GPU supports it (Ampere or newer), or lower --lr",
        }
