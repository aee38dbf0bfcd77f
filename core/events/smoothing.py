"""The smoothed loss curve: an exponential moving average computed block by block with numpy."""
from __future__ import annotations

from typing import Optional

import numpy as np


def ema(values: np.ndarray, state: Optional[float], alpha: float) -> tuple[np.ndarray, Optional[float]]:
    """Exponential moving average over the finite values; non-finite points repeat the previous mean.

    Vectorised per block: inside a block the recursion is a weighted cumulative sum; 256-point blocks keep
    the weights (1-alpha)^-k below 1e6 for alpha=0.05, far from float64 trouble."""
    out = np.empty(len(values))
    finite = np.isfinite(values)
    x = values[finite]
    y = np.empty(len(x))
    decay = 1.0 - alpha
    block = 256
    for b in range(0, len(x), block):
        xb = x[b:b + block]
        k = np.arange(len(xb))
        if state is None:
            state = float(xb[0])
        up = decay ** -(k.astype(np.float64))
        csum = np.cumsum(alpha * xb * up)
        yb = decay ** (k + 1) * state + csum * decay ** k
        y[b:b + block] = yb
        state = float(yb[-1])
    # Spread back: each position takes the mean as of its last finite point (NaN before the first).
    pos = np.cumsum(finite) - 1
    filled = np.where(pos >= 0, y[np.maximum(pos, 0)] if len(y) else np.nan, np.nan)
    out[:] = filled
    return out, state
