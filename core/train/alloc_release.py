"""An alert for a run that keeps handing GPU memory back to the driver.

With expandable segments (zerotui's allocator setting), PyTorch's caching allocator that cannot grow its
pool under the cap (``--gpu-mem-cap``, or the card itself) does not fail at once: it unmaps the free pages
it caches and retries the allocation, counting each time in ``num_alloc_retries``. Once, at the first
optimizer step, costs nothing measurable: 3b-full-ho84 under 80 GiB released once and ran at full speed.
At every step it does: 1b-full-ho23 under 26 GiB, where its pool wanted 26.65 GiB, released twice a step
and ran 23% slower than under 40 GiB, with the same losses (benchmarks/results/
seed-scenarios-caprel*-h100-2026-12-06.json; docs/estimator-log.md, "The cap and the allocator's release").
The dashboard's throughput chart shows the slowdown but not its cause; this names it.
"""
from __future__ import annotations

from typing import Optional

#: Log intervals in a row with new retries before the alert: the first step's one-off release is not one.
SUSTAINED = 3


class ReleaseWatch:
    """Alerts once when the allocator's retry count rose in ``SUSTAINED`` log intervals in a row; again only
    after as many intervals without a retry, so a run that lives at its cap is told once, not every log."""

    def __init__(self, sustained: int = SUSTAINED) -> None:
        self.sustained = sustained
        self.last: Optional[int] = None
        self.rising = 0        # intervals in a row with new retries
        self.quiet = 0         # intervals in a row without, once alerted
        self.alerted = False
        self.since_step: Optional[int] = None

    def check(self, retries: Optional[int], step: int) -> Optional[dict]:
        """``retries``: the allocator's count at this log (None without a CUDA device)."""
        if retries is None:
            return None
        new = retries - self.last if self.last is not None else retries
        self.last = retries
        if new <= 0:
            self.rising = 0
            self.quiet += 1
            if self.alerted and self.quiet >= self.sustained:
                self.alerted = False
            return None
        self.quiet = 0
        if self.rising == 0:
            self.since_step = step
        self.rising += 1
        if self.alerted or self.rising < self.sustained:
            return None
        self.alerted = True
        return {
            "kind": "memory_pressure",
            "message": f"the GPU memory pool is at its cap: PyTorch's allocator has handed cached memory back "
                       f"to the driver and retried in each of the last {self.rising} log intervals (since step "
                       f"{self.since_step}; {retries} times in all), which stalls the GPU and slows every step",
            "hint": "lower --micro-batch, turn on --grad-ckpt, or raise --gpu-mem-cap if the card has room; "
                    "`zerotui estimate` shows the plan's memory against the cap",
        }
