"""Whether a GPU run's NCCL process groups share one communicator's memory, decided by the machine and
the environment the run starts from.

A DeepSpeed run uses two process groups (core/train/distributed.py says which and why). zerotui binds the
default group to the rank's GPU, so torch makes DeepSpeed's groups by splitting its communicator, and
sets NCCL_COMM_SPLIT_SHARE_RESOURCES=1 unless the user set it, so the split shares the parent's buffers.
Two exceptions keep two communicators' worth of memory, and the estimator counts them
(core/estimate/cuda_context.py):

- WSL, where that split fails for a one-GPU job with CUDA error 600 (DeepSpeed issues #8248 and #7470,
  both on WSL; DeepSpeed 0.19 stopped binding one-rank jobs because of it): zerotui leaves the groups to
  DeepSpeed there;
- torch 2.6.1-2.7.0, which can hang with a bound device (pytorch/pytorch#153960): left to DeepSpeed too;
- a user's NCCL_COMM_SPLIT_SHARE_RESOURCES=0: the split then allocates its own buffers.
"""
from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from typing import Optional

#: NCCL's switch for a communicator made by ``ncclCommSplit`` to share its parent's resources (NCCL 2.18+;
#: ncclConfig_t.splitShare). Unset means NCCL's default, not shared.
SPLIT_SHARE_ENV = "NCCL_COMM_SPLIT_SHARE_RESOURCES"


def is_wsl(kernel_release: Optional[str] = None) -> bool:
    """True on WSL 1 and 2: their kernels' release strings name Microsoft ("...-microsoft-standard-WSL2")."""
    release = platform.uname().release if kernel_release is None else kernel_release
    return "microsoft" in release.lower()


def _torch_hangs_with_device_id() -> bool:
    """torch 2.6.x and 2.7.0 can hang with a bound device (pytorch/pytorch#153960; DeepSpeed skips them too)."""
    import importlib.metadata as md

    try:
        major, minor, patch = (int("".join(c for c in p if c.isdigit()) or 0)
                               for p in md.version("torch").split("+")[0].split(".")[:3])
    except (md.PackageNotFoundError, ValueError):
        return False
    return (2, 6, 0) < (major, minor, patch) < (2, 7, 1)


def binds_device() -> bool:
    """Whether zerotui binds the default process group to the GPU here (everywhere but WSL and torch
    2.6.x / 2.7.0)."""
    return not is_wsl() and not _torch_hangs_with_device_id()


def shares_one_communicator(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether a run started from ``env`` (this process's when None) on this machine has its groups
    share one communicator's memory."""
    env = os.environ if env is None else env
    return binds_device() and env.get(SPLIT_SHARE_ENV, "1").strip() != "0"
