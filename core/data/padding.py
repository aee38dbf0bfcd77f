"""How much of an unpacked micro-batch is padding, and the line that suggests packing when it is a lot.

Unpacked rows are padded to the longest row of their micro-batch (``tokenise.collate``), so data whose
rows are much shorter than ``seq_len``, or of very different lengths, spends part of every step on
padding. ``packing: true`` fills each sequence with whole rows instead, and no row attends to another
(docs/packing.md). On documents of many lengths that is what made zerotui 1.38-1.58x the Hugging Face
Trainer's real tokens/s on the same DeepSpeed config on the H200 (docs/speed.md); the step itself is the
same work per token either way.
"""
from __future__ import annotations

from typing import Optional

import torch

#: From this share of padding on, the run's log suggests packing.
HINT_SHARE = 0.25
#: Random micro-batches drawn to measure the share: enough for two digits, cheap for any data size.
SAMPLES = 512


def padding_share(lengths: torch.Tensor, micro_batch: int, seq_len: int, multiple: int = 8,
                  samples: int = SAMPLES, seed: int = 0) -> float:
    """The expected share of padding positions in a micro-batch of ``micro_batch`` random rows, padded
    as ``collate`` pads: to the longest row rounded up to ``multiple``, at most ``seq_len``, and not at
    all where the rows are one length."""
    n = int(lengths.numel())
    if n == 0 or micro_batch < 1:
        return 0.0
    g = torch.Generator().manual_seed(seed)
    picks = torch.randint(0, n, (samples, min(micro_batch, n)), generator=g)
    rows = lengths.to(torch.int64)[picks]
    longest = rows.max(dim=1).values
    rounded = torch.where(rows.min(dim=1).values == longest, longest, (longest + multiple - 1) // multiple * multiple)
    width = torch.clamp(rounded, max=seq_len)
    padded = (width * rows.shape[1]).sum().item()
    real = torch.clamp(rows, max=seq_len).sum().item()
    return 0.0 if padded == 0 else 1.0 - real / padded


def packing_hint(lengths: torch.Tensor, micro_batch: int, seq_len: int) -> Optional[str]:
    """A line for the run's log when unpacked micro-batches would be at least HINT_SHARE padding."""
    share = padding_share(lengths, micro_batch, seq_len)
    if share < HINT_SHARE:
        return None
    mean = float(lengths.to(torch.float64).mean()) if lengths.numel() else 0.0
    return (f"micro-batches of {micro_batch} rows are ~{share:.0%} padding here (rows average {mean:.0f} tokens, "
            f"seq_len {seq_len}): packing: true (--packing) fills each sequence with whole rows that never "
            f"attend to each other, so that share of each step trains on real tokens instead (docs/packing.md)")
