"""Adam's moments made when training starts, not at the first optimizer step.

The optimizers DeepSpeed builds for a zerotui plan make each parameter's state (``exp_avg``,
``exp_avg_sq``, ``step``) lazily, inside the first ``step()``: its FusedAdam (deepspeed/ops/adam/
fused_adam.py; what zerotui's ds_config gets without optimizer offload) and torch's Adam/AdamW (with
``torch_adam``), and DeepSpeed 0.19.8's ZeRO-1/2/3 optimizers leave it so (stage_1_and_2.py and stage3.py
``initialize_optimizer_states`` make only the gradient buffers; its bf16 and fp16 stage-0 wrappers take a
zero step at start). So a ZeRO run learnt whether its 8 bytes per trainable element fit only after its
first forward and backward, minutes into a 7B run at long sequences, and a resumed run (whose moments are
loaded at start) laid its memory out differently from a fresh one. Made here, right after
``deepspeed.initialize`` or a resume's load (then there is nothing to make), the moments sit with the
other model states, a plan whose states do not fit fails at start-up, and fresh and resumed runs start
alike.

Peaks mostly stay where they were. On the H200 with expandable segments the estimator's sweep harness
(torch's AdamW) ran 20 plans both ways (sweep 4, benchmarks/results/estimator-sweep4-scored-2026-12-03.txt):
11 peaked within 0.1 GiB of their lazy runs, the others between 3.1 GiB lower and 1.9 GiB higher (-6.2% ...
+5.4% reserved). Runs through zerotui's worker with FusedAdam were not measured this way: the first
version of this module recognised only torch's optimizers, so the worker runs meant to test it had lazy
state (docs/estimator-log.md, "Adam's state made at start").

The values are the ones the optimizer makes (zeros, step 0): torch's own ``_init_group`` makes torch's,
each parameter given a zero-stride stand-in gradient (no memory) for the call, which is all
``_init_group`` reads of it; FusedAdam's are written as its ``step`` writes them. Any other optimizer
(DeepSpeed's CPU Adam keeps its state on the host), or a torch whose ``_init_group`` has another
signature, is left alone, and training goes on as before. tests/deepspeed/test_optimizer_states.py trains
both ways and compares every tensor.
"""
from __future__ import annotations

import inspect
from typing import Any

#: torch.optim.Adam._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
#: state_steps) in torch 2.11 and 2.13 (the versions run): the group and six lists it fills.
_INIT_GROUP_LISTS = 6


def optimizer_chain(optimizer: Any) -> list[Any]:
    """``optimizer`` and the ones it wraps, outermost first: DeepSpeed's ZeRO and 16-bit wrappers each keep
    the one they wrap as ``.optimizer`` (a cycle or a deep chain stops the walk)."""
    found: list[Any] = []
    while optimizer is not None and all(optimizer is not o for o in found) and len(found) < 4:
        found.append(optimizer)
        optimizer = getattr(optimizer, "optimizer", None)
    return found


def base_optimizer(optimizer: Any) -> Any:
    """The optimizer under DeepSpeed's wrappers, the one that keeps the state."""
    chain = optimizer_chain(optimizer)
    return chain[-1] if chain else optimizer


def _kind(optimizer: Any) -> str:
    """"torch" for torch's Adam/AdamW with the ``_init_group`` this module calls, "fused" for DeepSpeed's
    FusedAdam (what zerotui's ds_config gets on a GPU without optimizer offload, and on the CPU), ""
    for anything else."""
    import torch

    cls = type(optimizer)
    if cls.__name__ == "FusedAdam" and cls.__module__.startswith("deepspeed."):
        return "fused"
    if not isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return ""
    init = getattr(optimizer, "_init_group", None)
    try:
        ok = init is not None and len(inspect.signature(init).parameters) == 1 + _INIT_GROUP_LISTS
    except (TypeError, ValueError):
        ok = False
    return "torch" if ok else ""


def make_optimizer_states(optimizer: Any) -> int:
    """Create the state the optimizer under ``optimizer`` (torch's Adam/AdamW, DeepSpeed's FusedAdam)
    would create at its first step, for every parameter that has none yet; return the bytes made (0 for
    another optimizer, or when every state exists)."""
    opt = base_optimizer(optimizer)
    kind = _kind(opt)
    if not kind:
        return 0
    make = _make_torch if kind == "torch" else _make_fused
    stage3 = _stage3_groups(optimizer)
    if stage3 is None:
        return make(opt, opt.param_groups)
    # ZeRO-3 hands the optimizer one flat fp32 sub-group at a time, put into its param group only for
    # that sub-group's step (stage3.py _optimizer_step): the same here.
    made = 0
    for group_id, flat in stage3:
        group = opt.param_groups[group_id]
        kept, group["params"] = group["params"], [flat]
        try:
            made += make(opt, [group])
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


def _make_torch(opt: Any, groups: list[dict]) -> int:
    import torch

    made = 0
    for group in groups:
        fresh = [p for p in group["params"] if not opt.state.get(p)]
        if not fresh:
            continue
        stand_ins = []  # a gradient buffer already there is used as it is
        try:
            for p in fresh:
                if p.grad is None:
                    p.grad = torch.zeros((), dtype=p.dtype, device=p.device).expand_as(p)
                    stand_ins.append(p)
            with torch.no_grad():
                opt._init_group(group, *([] for _ in range(_INIT_GROUP_LISTS)))
        except BaseException:
            _forget(opt, fresh)
            raise
        finally:
            for p in stand_ins:
                p.grad = None
        made += _bytes(opt, fresh)
    return made


def _make_fused(opt: Any, groups: list[dict]) -> int:
    """What DeepSpeed 0.19.8's FusedAdam.step makes for a parameter without state
    (deepspeed/ops/adam/fused_adam.py): the step count from the group, and two zero tensors like it."""
    import torch

    made = 0
    for group in groups:
        fresh = [p for p in group["params"] if not opt.state.get(p)]
        try:
            for p in fresh:
                opt.state[p] = {"step": group.get("step", 0), "exp_avg": torch.zeros_like(p.data),
                                "exp_avg_sq": torch.zeros_like(p.data)}
        except BaseException:
            _forget(opt, fresh)
            raise
        made += _bytes(opt, fresh)
    return made


def _forget(opt: Any, params: list) -> None:
    """Undo a partial make (an out-of-memory halfway): a parameter with half its state would fail at the
    step; with none, the optimizer makes it there as it always did."""
    for p in params:
        opt.state.pop(p, None)


def _bytes(opt: Any, params: list) -> int:
    import torch

    return sum(t.numel() * t.element_size() for p in params for t in opt.state[p].values()
               if torch.is_tensor(t) and t.device == p.device and t.dim() > 0)
