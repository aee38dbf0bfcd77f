"""Adam's moments made when training starts, not at the first optimizer step.

torch's Adam and AdamW create each parameter's state (``exp_avg``, ``exp_avg_sq``, ``step``) lazily, inside
the first ``step()``, and DeepSpeed 0.19.8's ZeRO optimizers leave it so (stage_1_and_2.py and stage3.py
``initialize_optimizer_states`` make only the gradient buffers; its bf16 and fp16 stage-0 wrappers already
take a zero step at start). So a ZeRO-1/2/3 run used to find out whether its 8 bytes per trainable
element fit only after its first forward and backward, minutes into a 7B run at long sequences, and a
resumed run (whose moments are loaded at start) laid its memory out differently from a fresh one. Made
here, right after ``deepspeed.initialize`` or a resume's load (then there is nothing to make), the
moments sit with the other model states, a plan whose states do not fit fails at start-up, and fresh
and resumed runs start alike.

It does not lower the peak as a rule. On the H200 with expandable segments, of 20 plans run both ways
(the estimator's sweeps 1-3 and sweep 4) 11 peaked within 0.1 GiB of where they had, the others between
3.1 GiB lower and 1.9 GiB higher (-6.2% ... +5.4% reserved), and four 1.1B full fine-tunes through
zerotui's worker peaked to the MiB where they had (seed-scenarios-expandable-d/-h and -eager-a): where the
first step once grew the pool, later steps' activations used that room.

The values are the ones torch makes (zeros, step 0) because torch's own ``_init_group`` makes them: each
parameter gets a zero-stride stand-in gradient (no memory) for the call, which is all ``_init_group``
reads of it. Any other optimizer (DeepSpeed's CPU Adam keeps its state on the host), or a torch whose
``_init_group`` has another signature, is left alone, and training goes on as before.
"""
from __future__ import annotations

import inspect
from typing import Any

#: torch.optim.Adam._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
#: state_steps) in torch 2.11 and 2.13 (the versions run): the group and six lists it fills.
_INIT_GROUP_LISTS = 6


def base_optimizer(optimizer: Any) -> Any:
    """The torch optimizer under DeepSpeed's wrappers (each keeps the one it wraps as ``.optimizer``)."""
    seen = set()
    while getattr(optimizer, "optimizer", None) is not None and id(optimizer) not in seen:
        seen.add(id(optimizer))
        optimizer = optimizer.optimizer
    return optimizer


def _adam(optimizer: Any) -> bool:
    import torch

    if not isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return False
    init = getattr(optimizer, "_init_group", None)
    try:
        return init is not None and len(inspect.signature(init).parameters) == 1 + _INIT_GROUP_LISTS
    except (TypeError, ValueError):
        return False


def make_optimizer_states(optimizer: Any) -> int:
    """Create the state torch's Adam/AdamW would create at the first step, for every parameter that has
    none yet; return the bytes made (0 for another optimizer, or when every state exists)."""
    opt = base_optimizer(optimizer)
    if not _adam(opt):
        return 0
    if _stage3_groups(optimizer) is None:
        return _make(opt, opt.param_groups)
    # ZeRO-3 hands the torch optimizer one flat fp32 sub-group at a time, put into its param group only
    # for that sub-group's step (stage3.py _optimizer_step): the same here.
    made = 0
    for group_id, flat in _stage3_groups(optimizer):
        group = opt.param_groups[group_id]
        kept, group["params"] = group["params"], [flat]
        try:
            made += _make(opt, [group])
        finally:
            group["params"] = kept
    return made


def _stage3_groups(wrapper: Any) -> list[tuple[int, Any]] | None:
    """(param group, flat fp32 sub-group) pairs of a DeepSpeed ZeRO-3 optimizer whose states live on the
    GPU; [] for one that offloads them (its CPU or NVMe optimizer keeps its own); None for any other."""
    flats = getattr(wrapper, "fp32_partitioned_groups_flat", None)
    to_group = getattr(wrapper, "sub_group_to_group_id", None)
    if flats is None or to_group is None:
        return None
    if getattr(wrapper, "offload_optimizer", False) or getattr(wrapper, "swap_optimizer", False):
        return []
    return [(to_group[i], flat) for i, flat in enumerate(flats) if flat is not None]


def _make(opt: Any, groups: list[dict]) -> int:
    import torch

    made = 0
    for group in groups:
        fresh = [p for p in group["params"] if not opt.state.get(p)]
        stand_ins = [p for p in fresh if p.grad is None]  # a gradient buffer already there is used as is
        if not fresh:
            continue
        for p in stand_ins:
            p.grad = torch.zeros((), dtype=p.dtype, device=p.device).expand_as(p)
        try:
            with torch.no_grad():
                opt._init_group(group, *([] for _ in range(_INIT_GROUP_LISTS)))
        finally:
            for p in stand_ins:
                p.grad = None
        made += sum(t.numel() * t.element_size() for p in fresh for t in opt.state[p].values()
                    if torch.is_tensor(t) and t.device == p.device and t.dim() > 0)
    return made
