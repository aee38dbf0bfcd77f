"""Run as ``python tests/helpers/optimizer_states.py STAGE PORT OPTIMIZER``: two real DeepSpeed engines on
the CPU train three steps from the same weights, one with its Adam state made up front
(core/train/optimizer_state.py), one with the optimizer's own lazy state; prints one JSON line comparing
them. OPTIMIZER: "zerotui" for the optimizer section zerotui writes (DeepSpeed builds its FusedAdam),
"torch" for torch's AdamW (``torch_adam``, what the estimator's sweeps use). Its own process: DeepSpeed's
process group and accelerator state stay out of pytest's."""
import json
import os
import sys

import deepspeed
import torch

from zerotui.core.deepspeed.config import optimizer_section
from zerotui.core.plan.schema import Plan
from zerotui.core.train.optimizer_state import base_optimizer, make_optimizer_states


def make(stage: int, kind: str):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    section = optimizer_section(Plan(model="x", lr=1e-2, weight_decay=0.1))
    if kind == "torch":
        section["params"]["torch_adam"] = True
    cfg = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": stage},
           "optimizer": section}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    return engine


def flat_params(engine) -> list:
    """What the optimizer updates: ZeRO-3's flat fp32 sub-groups (its param groups are empty between
    steps and its module's parameters partitioned), else the optimizer's parameters."""
    flats = getattr(engine.optimizer, "fp32_partitioned_groups_flat", None)
    if flats is not None:
        return [f for f in flats if f is not None]
    return [p for g in base_optimizer(engine.optimizer).param_groups for p in g["params"]]


def layout(engine) -> list:
    opt = base_optimizer(engine.optimizer)
    return [sorted((k, str(t.dtype) if torch.is_tensor(t) else type(t).__name__,
                    list(t.shape) if torch.is_tensor(t) else [], str(t.device) if torch.is_tensor(t) else "")
                   for k, t in s.items()) for s in opt.state.values()]


def train(engine, steps: int = 3) -> tuple[list, list]:
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        loss = engine(torch.randn(4, 64, generator=gen)).pow(2).mean()
        engine.backward(loss)
        engine.step()
        losses.append(loss.item())
    opt = base_optimizer(engine.optimizer)
    tensors = [p.detach().clone() for p in flat_params(engine)]
    tensors += [t.clone() for s in opt.state.values() for _, t in sorted(s.items()) if torch.is_tensor(t)]
    return losses, tensors


def main(stage: int, port: int, kind: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    eager = make(stage, kind)
    before = layout(eager)
    weights = [p.detach().clone() for p in flat_params(eager)]
    made = make_optimizer_states(eager.optimizer)
    made_again = make_optimizer_states(eager.optimizer)
    warm = layout(eager)
    numel = sum(getattr(p, "ds_numel", p.numel()) for p in eager.module.parameters())  # stage 3 partitions
    untouched = all(torch.equal(a, p) for a, p in zip(weights, flat_params(eager)))
    grads_left = sum(p.grad is not None for p in flat_params(eager))
    losses_e, tensors_e = train(eager)
    lazy = make(stage, kind)
    losses_l, tensors_l = train(lazy)
    print(json.dumps({"optimizer": type(base_optimizer(eager.optimizer)).__name__,
                      "stateless_before": all(not s for s in before), "made": made, "made_again": made_again,
                      "fp32_elements": numel, "grads_left": grads_left, "weights_untouched": untouched,
                      "checked_tensors": len(tensors_e), "layout_equal": warm == layout(lazy),
                      "losses": [losses_e, losses_l],
                      "same_results": len(tensors_e) == len(tensors_l)
                      and all(torch.equal(a, b) for a, b in zip(tensors_e, tensors_l))}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
    sys.stdout.flush()
    # The result is printed; leave without the interpreter's teardown. Two engines leave gloo threads that
    # neither torch's nor DeepSpeed's destroy_process_group joins (checked in /proc/self/task), and C++
    # destroying them at exit aborted the process after its result, twice in CI (2026-12-05, 2026-12-07:
    # "terminate called without an active exception", rc -6), even with the group destroyed first.
    os._exit(0)
