"""The order in which training examples are visited: deterministic, sharded by rank, resumable.

The order of epoch ``e`` is a permutation seeded by ``(seed, e)`` alone, so after a resume from
``(epoch, position)`` the run sees exactly the batches it would have seen without the interruption,
and every rank agrees on the permutation without talking. Each global micro-batch takes
``micro_batch × world`` consecutive entries of the permutation; rank ``r`` takes its ``r``-th slice.
The tail of an epoch that cannot fill a global micro-batch is left out, so all ranks step together.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from zerotui.core.errors import DataError


@dataclass
class DataPosition:
    epoch: int = 0
    batch: int = 0          # global micro-batches already taken in this epoch

    def to_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "batch": self.batch}

    @classmethod
    def from_dict(cls, d: dict) -> "DataPosition":
        return cls(int(d.get("epoch", 0)), int(d.get("batch", 0)))


class DataOrder:
    def __init__(self, n_items: int, micro_batch: int, world: int, rank: int, seed: int,
                 what: str = "training data") -> None:
        self.n = n_items
        self.micro_batch = micro_batch
        self.world = world
        self.rank = rank
        self.seed = seed
        self.batches_per_epoch = n_items // (micro_batch * world)
        if self.batches_per_epoch < 1:
            raise DataError(
                f"{what} has {n_items} sequences, fewer than one micro-batch across all GPUs "
                f"({micro_batch} × {world})",
                "use more data, a smaller --micro-batch, or fewer GPUs")
        self._perm_epoch = -1
        self._perm = torch.empty(0, dtype=torch.long)
        self.pos = DataPosition()

    def _permutation(self, epoch: int) -> torch.Tensor:
        if epoch != self._perm_epoch:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._perm = torch.randperm(self.n, generator=g)
            self._perm_epoch = epoch
        return self._perm

    def indices(self, pos: DataPosition) -> list[int]:
        """This rank's example indices for global micro-batch ``pos``."""
        perm = self._permutation(pos.epoch)
        start = (pos.batch * self.world + self.rank) * self.micro_batch
        return perm[start:start + self.micro_batch].tolist()

    def next(self) -> list[int]:
        """The next micro-batch of this rank, advancing the position (and the epoch at its end)."""
        out = self.indices(self.pos)
        self.pos = DataPosition(self.pos.epoch, self.pos.batch + 1)
        if self.pos.batch >= self.batches_per_epoch:
            self.pos = DataPosition(self.pos.epoch + 1, 0)
        return out

    def epoch_float(self) -> float:
        """Epochs done so far, fractional (what a step event reports)."""
        return self.pos.epoch + self.pos.batch / self.batches_per_epoch
