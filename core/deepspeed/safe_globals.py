"""The non-tensor classes DeepSpeed pickles into its checkpoint files, and only those.

A full ``torch.load`` (weights_only off) unpickles arbitrary objects: a ``.pt`` file planted in a run
folder would run code the moment it is read. Every checkpoint read of zerotui's — a resume's
(core/train/mmap_load.py) and merge's (core/export/checkpoint_load.py) — is ``weights_only=True`` with
this allowlist. It was read off real checkpoints of every kind zerotui writes (ZeRO 0-3, full and LoRA,
bf16 and fp16, optimizer on the device or the CPU) with ``torch.serialization.get_unsafe_globals_in_checkpoint``;
tests/deepspeed/test_merge.py checks it against fresh ones, and every resume test loads through it.
"""
from __future__ import annotations

from typing import Any


def deepspeed_safe_globals() -> list[Any]:
    from deepspeed.runtime.fp16 import loss_scaler
    from deepspeed.runtime.zero.config import ZeroStageEnum
    from deepspeed.utils.tensor_fragment import fragment_address

    found = [ZeroStageEnum, fragment_address, loss_scaler.LossScaler, loss_scaler.DynamicLossScaler]
    profile = getattr(loss_scaler, "LossScaleProfile", None)  # newer DeepSpeed: an enum in the scaler's state
    return found + ([profile] if profile is not None else [])
