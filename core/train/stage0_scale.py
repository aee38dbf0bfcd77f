"""fp16 at ZeRO stage 0: the loss scale DeepSpeed keeps and divides by, but never multiplies in.

At stage 0 in fp16 DeepSpeed wraps the optimizer in ``FP16_Optimizer`` (``FP16_UnfusedOptimizer`` for an
unfused one). It keeps a dynamic scale (``loss_scale_config.cur_scale``), looks for inf/NaN in the 16-bit
gradients, halves the scale and skips the step when it finds one, and divides every gradient by the scale
before the update. In DeepSpeed 0.19.8 ``engine.backward`` multiplies the loss by that scale only for the ZeRO
optimizers (``scale_if_loss``) and torch.autocast's GradScaler; stage 0's optimizer falls through to a plain
``loss.backward()`` (DeepSpeed pull request #8393, open when this was written, describes the same). So:

- the gradients are never scaled, small ones underflow in fp16 as if there were no loss scaling;
- no overflow is ever seen, the scale never moves, no step is skipped;
- every update is divided by the scale (2^16 by default). Adam hides most of that while the gradients stay
  far above its eps; gradient clipping does not (it compares the divided norm with its threshold).

Measured through zerotui's worker on an H100 (2026-12-06, the 1.1B shape, LoRA started at 2^32): at ZeRO-0
the scale stayed at 2^32 for 24 steps, none skipped, the loss unchanged (10.68), the largest adapter gradient
0.07; the same plan at ZeRO-1 skipped 15 steps on its way down to 2^18 and its loss fell to 9.50.

``scaled_for_backward`` gives ``engine.backward`` the loss unchanged in value, with its gradient multiplied
by the scale wherever DeepSpeed left it unmultiplied. It reads what DeepSpeed did from the gradient that
reaches the loss: 1/accumulation where DeepSpeed only divided by the accumulation, scale/accumulation where it
scaled. So a DeepSpeed that scales stage 0 itself is not scaled twice, whatever its version, and nothing waits
on the GPU to decide.
"""
from __future__ import annotations

from typing import Any

import torch

from zerotui.core.train.lossscale import live_loss_scale

#: How far the gradient reaching the loss, times the accumulation, may be from 1 and still mean "DeepSpeed
#: did not scale": a scale is a power of two of at least 2 when it matters, and a 16-bit 1/accumulation is
#: off by at most 2^-11.
_UNSCALED_TOLERANCE = 1e-2


class _ScaleWhereUnscaled(torch.autograd.Function):
    """Identity forward; backward multiplies the incoming gradient by ``scale`` where it is 1/``gas``."""

    @staticmethod
    def forward(ctx: Any, loss: torch.Tensor, scale: float, gas: int) -> torch.Tensor:
        ctx.scale, ctx.gas = scale, gas
        return loss.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        unscaled = (grad.float() * ctx.gas - 1.0).abs() < _UNSCALED_TOLERANCE
        # the product in float32, as DeepSpeed's own scaled loss is: a scale past 16-bit's range must give
        # inf in the 16-bit gradients (an overflow its check sees), not inf in the factor itself
        factor = torch.where(unscaled, torch.full_like(grad, ctx.scale, dtype=torch.float32),
                             torch.ones_like(grad, dtype=torch.float32))
        return (grad.float() * factor).to(grad.dtype), None, None


def scaled_for_backward(loss: torch.Tensor, optimizer: Any, precision: str, gas: int) -> torch.Tensor:
    """``loss`` for ``engine.backward``: as it is, or (fp16 with a live scale above 1) wrapped so that its
    gradient carries the scale where DeepSpeed's backward did not put it (the module docstring)."""
    scale = live_loss_scale(optimizer, precision)
    if scale is None or scale <= 1.0 or not loss.requires_grad:
        return loss
    return _ScaleWhereUnscaled.apply(loss, scale, max(1, int(gas)))
