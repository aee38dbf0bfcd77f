"""Adam's state after resuming a run whose optimizer is offloaded to NVMe.

DeepSpeed 0.19.8 resumes an NVMe-offloaded optimizer (ZeRO-3) from the swap files its checkpoint keeps:
``engine.load_checkpoint`` copies ``<tag>/offloaded_tensors/`` back into the swap folder and skips the
optimizer's state dict altogether (engine.py: ``load_zero_checkpoint and not zero_nvme_offload_optimizer()``).
Only the fp32 weights come back through that. Adam's moments do not: the swapper reads a state tensor from
its file only once the optimizer's state holds that tensor (swap_tensor/optimizer_utils.py,
``_get_state_tensors``), and a fresh process's state is empty until CPU Adam's first step fills it with
zeros (ops/adam/cpu_adam.py), which are then written over the checkpoint's files. The step count, kept in
the state dict, starts again at 1 with them. On the tiny model (ZeRO-3, optimizer on NVMe, stopped at step 7
and resumed) the losses matched the uninterrupted run at step 8 and differed by up to 3.3% from step 9
on; the resumed run's checkpoint at step 10 recorded Adam's step as 3.

The same skip loses an fp16 run's loss scaler (``_rigid_load_state_dict`` reads it from that state dict): the
resumed run started again at 2^initial_scale_power, where a resume with the optimizer in host RAM goes on
with the scale it stopped at, its hysteresis and its count of steps since the last overflow (measured on
the tiny model: 65536 after a stop at 32768, and the losses then apart from the host resume's in the fifth
digit).

``restore_state`` gives the optimizer, before its first step, the state DeepSpeed's own resume would: the loss
scaler as saved, then for each fp32 partition the saved step count and, where DeepSpeed swaps the partition,
placeholders for the two moments, which the swapper then fills from the checkpoint's files (it names them
``exp_avg-<id>`` and ``exp_avg_sq-<id>``, as the checkpoint's files are named); a partition too small to swap
(under DeepSpeed's 1 MiB) kept its moments in the saved state dict, and they are copied from there. With it a
resumed run matches the uninterrupted one as a resume with the optimizer in host RAM does: to the bit
(tests/deepspeed/test_nvme_offload.py), or, at some step counts, with the same last-bit differences CPU Adam's
recomputed bias correction gives host RAM's resume (docs/nvme_offload.md).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

#: Adam's moments, as CPU Adam names them in its state.
MOMENTS = ("exp_avg", "exp_avg_sq")


def restore_state(engine: Any, checkpoint_dir: Path, tag: str) -> Optional[str]:
    """Put back the optimizer state DeepSpeed's NVMe resume leaves out (the module docstring); a sentence
    where that could not be done (the run goes on from fresh moments, as DeepSpeed alone would), else None.
    Nothing is touched unless the optimizer is on NVMe."""
    if not getattr(engine, "zero_nvme_offload_optimizer", lambda: False)():
        return None
    import torch

    from zerotui.core.deepspeed.safe_globals import deepspeed_safe_globals

    zero = engine.optimizer
    path = Path(engine._get_zero_ckpt_name(str(checkpoint_dir), tag))
    try:
        with torch.serialization.safe_globals(deepspeed_safe_globals()):
            # mapped: the file also holds the fp32 weights (4 bytes a weight of the partition), unread here
            saved = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        zero_state = saved["optimizer_state_dict"]
        states = zero_state["optimizer_state_dict"]["state"]
        saved_groups = zero_state["optimizer_state_dict"]["param_groups"]
    except (OSError, RuntimeError, KeyError, TypeError) as err:
        return f"Adam's state could not be read from {path.name} ({type(err).__name__}): its moments start from zero"
    _restore_loss_scaler(zero, zero_state)
    # The saved state is indexed as DeepSpeed saved it: the fp32 sub-group partitions in their param
    # groups' order (stage3.py, _set_fp32_optimizer_param_groups before state_dict()).
    groups = range(len(zero.optimizer.param_groups))
    order = [s for g in groups for s in range(len(zero.fp16_groups)) if zero.sub_group_to_group_id[s] == g]
    if len(order) != len(states):
        return (f"{path.name} holds {len(states)} optimizer states where this run has {len(order)}: Adam's "
                "moments start from zero")
    if len(saved_groups) != len(zero.optimizer.param_groups):
        return (f"{path.name} holds {len(saved_groups)} optimizer parameter groups where this run has "
                f"{len(zero.optimizer.param_groups)}: Adam's moments start from zero")
    for live, kept in zip(zero.optimizer.param_groups, saved_groups):
        # the learning rate the next step uses among them: the scheduler sets it only after that step
        live.update({k: v for k, v in kept.items() if k != "params"})
    for index, sub_group in enumerate(order):
        saved_state = states.get(index, {})
        numel = int(zero.fp16_partitioned_groups_flat_numel[sub_group])
        param = zero.fp32_partitioned_groups_flat[sub_group]
        state: dict[str, Any] = {"step": int(saved_state.get("step", 0))}
        for name in MOMENTS:
            kept = saved_state.get(name)
            if zero._swappable_optimizer_subgroup(sub_group):
                # never written (empty pages): swap-in replaces it with the file's contents
                state[name] = torch.empty(numel, dtype=param.dtype)
            elif torch.is_tensor(kept) and kept.numel() == numel:
                state[name] = kept.detach().to(param.dtype).clone()  # a copy: the file's mapping goes
            else:
                return f"{path.name} has no {name} for optimizer partition {sub_group}: Adam's moments start from zero"
        if state["step"] > 0:
            zero.optimizer.state[param] = state
    return None


def _restore_loss_scaler(zero: Any, zero_state: dict) -> None:
    """The loss scaler, its dynamic flag and the last overflow, as DeepSpeed's ``_rigid_load_state_dict`` sets
    them: an fp16 run goes on at the scale it stopped with. A file without them (or with something else
    under the name) leaves the fresh scaler, which is what DeepSpeed alone would have used."""
    from deepspeed.runtime.fp16.loss_scaler import LossScalerBase

    scaler = zero_state.get("loss_scaler")
    if isinstance(scaler, LossScalerBase) and type(scaler) is type(zero.loss_scaler):
        zero.loss_scaler = scaler
        zero.dynamic_loss_scale = bool(zero_state.get("dynamic_loss_scale", zero.dynamic_loss_scale))
        zero.overflow = bool(zero_state.get("overflow", False))
