"""Loading a run's checkpoint for ``merge`` without running anything planted in it.

A full ``torch.load`` (weights_only off) unpickles arbitrary objects, so a ``.pt`` file dropped into a run
folder would run code the moment ``zerotui merge`` read it; DeepSpeed's own zero_to_fp32 loads that way.
Every load here is ``weights_only=True`` — including zero_to_fp32's, through ``weights_only_loads`` —
with the allowlist of exactly the classes DeepSpeed's checkpoints hold besides tensors and plain
containers (core/deepspeed/safe_globals.py).

A checkpoint that is marked complete but cannot be read (truncated, a disk error, a foreign object) is
skipped for the previous complete one, and the reason is kept for the user.
"""
from __future__ import annotations

import contextlib
import pickle
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zerotui.core.deepspeed.safe_globals import deepspeed_safe_globals
from zerotui.core.errors import RunError
from zerotui.core.train.checkpoint import CheckpointInfo, list_checkpoints

ZERO_STATE_GLOB = "*_optim_states.pt"
MODEL_STATES = "mp_rank_00_model_states.pt"


@contextlib.contextmanager
def weights_only_loads() -> Iterator[None]:
    """Every ``torch.load`` inside (DeepSpeed's zero_to_fp32 turns weights_only off) is made
    ``weights_only=True`` with DeepSpeed's classes allowed. merge is a one-shot command, so patching the
    function for the duration is safe; it is put back on the way out."""
    import torch

    original = torch.load

    def load(*args: Any, **kwargs: Any) -> Any:
        kwargs["weights_only"] = True
        return original(*args, **kwargs)

    with torch.serialization.safe_globals(deepspeed_safe_globals()):
        torch.load = load
        try:
            yield
        finally:
            torch.load = original


def consolidated_state_dict(info: CheckpointInfo, lazy: bool = False) -> dict[str, Any]:
    """The weights of one checkpoint as a plain ``{name: tensor}`` dict on CPU.

    ZeRO stages 1-3 (and stage 0's bf16 optimizer, which also keeps partitioned fp32 masters): the fp32
    master weights through DeepSpeed's zero_to_fp32 logic. Otherwise (stage 0 fp32/fp16) the module
    weights stored in the model-states file. Raises whatever the files' reading raises.

    ``lazy``: nothing is materialised — ZeRO weights come as DeepSpeed's lazy-mode ``GatheredTensor``
    (``.contiguous()`` gathers one), the model-states file's as memory-mapped tensors in their stored
    dtype — so a writer can go one shard at a time (core/export/shards.py).
    """
    import torch

    with weights_only_loads():
        if any(info.path.glob(ZERO_STATE_GLOB)):
            from deepspeed.utils.zero_to_fp32 import (
                get_fp32_state_dict_from_zero_checkpoint,
            )

            try:
                # zero_to_fp32 reports progress with print(): keep stdout for the command's own output.
                with contextlib.redirect_stdout(sys.stderr):
                    return get_fp32_state_dict_from_zero_checkpoint(str(info.path.parent), tag=info.tag,
                                                                    lazy_mode=lazy)
            except ValueError as err:
                if "is not a zero checkpoint" not in str(err):
                    raise
        model_file = info.path / MODEL_STATES
        if not model_file.is_file():
            raise FileNotFoundError(f"no {MODEL_STATES}")
        state = torch.load(model_file, map_location="cpu", weights_only=True, mmap=lazy)
    if lazy:
        return dict(state["module"])
    return {k: v.float() for k, v in state["module"].items()}


@dataclass
class Loaded:
    info: CheckpointInfo
    state: dict[str, Any]
    skipped: list[str] = field(default_factory=list)  # "step10: <why>" for each newer one passed over


def _why(err: BaseException, folder: Path | None = None) -> str:
    if isinstance(err, pickle.UnpicklingError) and "weights_only" in str(err):
        first = next((ln for ln in str(err).splitlines() if "GLOBAL" in ln or "Unsupported" in ln), "")
        return f"it holds objects a checkpoint never holds, refused unread ({first.strip()[:120]})"
    from zerotui.core.train.checkpoint_files import damaged_file

    damaged = damaged_file(folder) if folder is not None else None
    if damaged:  # torch's own message names no file and runs on for lines of advice
        return f"{damaged.partition(':')[0]} is cut short or damaged"
    text = " ".join(str(err).split()).split(". ")[0][:160] or type(err).__name__
    return f"it cannot be read ({text})"


def load_checkpoint(paths: Any, tag: str | None, lazy: bool = False) -> Loaded | None:
    """The weights of checkpoint ``tag`` (a tag, a step number; None / "latest": the newest complete one
    that reads, skipping damaged ones). None when there is no complete checkpoint at all. ``lazy``: see
    ``consolidated_state_dict`` (the files are still opened and parsed, so damage shows up here)."""
    every = list_checkpoints(paths.checkpoints)
    if tag not in (None, "latest"):
        match = [c for c in every if c.tag == tag or str(c.step) == tag]
        if not match:
            have = ", ".join(c.tag for c in every if c.complete) or "none"
            raise RunError(f"run {paths.name} has no checkpoint {tag!r}", f"complete checkpoints: {have}")
        if not match[0].complete:
            raise RunError(f"checkpoint {match[0].tag} of {paths.name} is incomplete (torn while being written)",
                           "pick another with --checkpoint, or leave it out for the newest complete one")
        try:
            return Loaded(match[0], consolidated_state_dict(match[0], lazy))
        except Exception as err:  # noqa: BLE001 - any failure to read a file is the checkpoint's damage
            raise RunError(f"checkpoint {match[0].tag} of {paths.name} is damaged: {_why(err, match[0].path)}",
                           "leave out --checkpoint for the newest one that reads, or pick another") from None
    skipped: list[str] = []
    for info in reversed([c for c in every if c.complete]):
        try:
            return Loaded(info, consolidated_state_dict(info, lazy), skipped)
        except Exception as err:  # noqa: BLE001 - damaged: try the previous complete one
            skipped.append(f"{info.tag}: {_why(err, info.path)}")
    if skipped:
        raise RunError(f"no checkpoint of {paths.name} can be read ({'; '.join(skipped[:2])})",
                       f"`zerotui resume {paths.name}` writes new ones")
    return None
