"""Decisions taken at an optimizer-step boundary, made by rank 0 and obeyed by every rank.

Only rank 0 reads ``control.jsonl`` (through ``ControlState``) and the clock for time-based saves. With
several ranks, its flags are broadcast at every step boundary so that all ranks stop, pause or save at
the same step: a rank that saved alone would hang DeepSpeed's collective save. The broadcast goes over
a separate gloo group on CPU tensors, so on GPUs it never waits for the CUDA stream (an NCCL broadcast
of a device tensor read back with ``.tolist()`` would force a device sync at every step).
Cost, measured with 2 CPU ranks on the CI machine: see ``benchmarks/throughput/README.md``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class StepFlags:
    stop: bool = False           # graceful: checkpoint, then end
    stop_now: bool = False       # end without a checkpoint
    checkpoint: bool = False     # save now (asked by a client)
    paused: bool = False
    save_due: bool = False       # save_minutes elapsed since the last save

    def as_list(self) -> list[int]:
        return [int(self.stop), int(self.stop_now), int(self.checkpoint), int(self.paused), int(self.save_due)]

    @classmethod
    def from_list(cls, v: list[int]) -> "StepFlags":
        return cls(*(bool(x) for x in v[:5]))


class FlagSync:
    def __init__(self, world: int, rank: int, control: Any, save_minutes: float) -> None:
        self.world = world
        self.rank = rank
        self.control = control
        self.save_s = save_minutes * 60.0
        self.last_save = time.monotonic()
        self.group: Optional[Any] = None
        if world > 1:
            import torch.distributed as dist

            from zerotui.core.train.distributed import collective_timeout

            # Every rank must create the group, in the same order (a collective call). Its timeout is the
            # run's (a new gloo group would otherwise wait 30 min for a peer that hangs between steps).
            self.group = dist.new_group(backend="gloo", timeout=collective_timeout())

    def saved(self) -> None:
        self.last_save = time.monotonic()

    def _local(self) -> StepFlags:
        c = self.control
        want_ckpt = c.checkpoint.is_set()
        if want_ckpt:
            c.checkpoint.clear()
        return StepFlags(stop=c.stop.is_set(), stop_now=c.stop_now.is_set(), checkpoint=want_ckpt,
                         paused=c.paused, save_due=self.save_s > 0 and time.monotonic() - self.last_save >= self.save_s)

    def exchange(self) -> StepFlags:
        """Rank 0's flags, on every rank."""
        flags = self._local() if self.rank == 0 else StepFlags()
        if self.group is None:
            return flags
        import torch
        import torch.distributed as dist

        t = torch.tensor(flags.as_list(), dtype=torch.int32)
        dist.broadcast(t, src=0, group=self.group)
        return StepFlags.from_list(t.tolist())

    def wait_while_paused(self, poll_s: float = 1.0) -> StepFlags:
        """One wait of at most ``poll_s`` for an unpause, then a fresh exchange. The caller loops while
        the flags say paused; rank 0 re-broadcasting every ``poll_s`` keeps the other ranks' collectives
        far from the process group's timeout (distributed.DEFAULT_TIMEOUT_MINUTES)."""
        if self.rank == 0:
            self.control.resume.wait(poll_s)
        return self.exchange()
