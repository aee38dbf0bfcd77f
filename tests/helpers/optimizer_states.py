"""Run as ``python tests/helpers/optimizer_states.py STAGE PORT``: two real DeepSpeed engines on the CPU
train three steps from the same weights, one with its Adam state made up front
(core/train/optimizer_state.py), one with torch's lazy state; prints one JSON line comparing them.
Its own process: DeepSpeed's process group and accelerator state stay out of pytest's."""
import json
import os
import sys

import deepspeed
import torch

from zerotui.core.train.optimizer_state import base_optimizer, make_optimizer_states


def make(stage: int):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    cfg = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": stage},
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-2, "weight_decay": 0.1, "torch_adam": True}}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    return engine


def layout(engine) -> list:
    opt = base_optimizer(engine.optimizer)
    return [sorted((k, str(t.dtype), list(t.shape), str(t.device)) for k, t in s.items())
            for s in opt.state.values()]


def train(engine, steps: int = 3) -> tuple[list, list]:
    gen = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(steps):
        loss = engine(torch.randn(4, 64, generator=gen)).pow(2).mean()
        engine.backward(loss)
        engine.step()
        losses.append(loss.item())
    opt = base_optimizer(engine.optimizer)
    tensors = [t.clone() for p in engine.module.parameters() for t in [p.detach()]]
    tensors += [t.clone() for s in opt.state.values() for _, t in sorted(s.items())]
    return losses, tensors


def main(stage: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    eager = make(stage)
    before = layout(eager)
    made = make_optimizer_states(eager.optimizer)
    made_again = make_optimizer_states(eager.optimizer)
    warm = layout(eager)
    numel = sum(getattr(p, "ds_numel", p.numel()) for p in eager.module.parameters())  # stage 3 partitions
    # the stand-in gradients are gone, and the weights are as they were (no step, no weight decay)
    grads_left = sum(p.grad is not None for g in base_optimizer(eager.optimizer).param_groups for p in g["params"])
    losses_e, tensors_e = train(eager)
    lazy = make(stage)
    losses_l, tensors_l = train(lazy)
    print(json.dumps({"stateless_before": all(not s for s in before), "made": made, "made_again": made_again,
                      "fp32_elements": numel, "grads_left": grads_left,
                      "layout_equal": warm == layout(lazy), "losses": [losses_e, losses_l],
                      "same_results": len(tensors_e) == len(tensors_l)
                      and all(torch.equal(a, b) for a, b in zip(tensors_e, tensors_l))}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
