"""Run as ``python tests/helpers/stage0_scale.py PORT``: the same tiny fp16 model trained by real DeepSpeed
engines on the CPU at ZeRO-0 and ZeRO-1, each with ``engine.backward(loss)`` as it is and through zerotui's
``scaled_for_backward`` (core/train/stage0_scale.py), from a loss scale of 2^32 that must overflow. Prints one
JSON line per engine: the scale after each step, the steps skipped, the parameters at the end. The CPU
refuses fp16 training, so DeepSpeed is told the CPU has it (the tiny model's fp16 arithmetic runs on the
CPU regardless)."""
import json
import os
import sys

import deepspeed
import torch
from deepspeed.accelerator import get_accelerator

from zerotui.core.train.stage0_scale import scaled_for_backward

GAS, STEPS = 2, 24


def train(stage: int, fixed: bool) -> dict:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).half()
    cfg = {"train_batch_size": GAS, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": GAS,
           "fp16": {"enabled": True, "initial_scale_power": 32, "loss_scale": 0, "hysteresis": 1,
                    "loss_scale_window": 1000},
           "optimizer": {"type": "Adam", "params": {"lr": 1e-2}}, "zero_optimization": {"stage": stage}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    data = torch.Generator().manual_seed(1)
    scales = []
    for _ in range(STEPS):
        for _ in range(GAS):
            x = torch.randn(1, 16, generator=data).half()
            loss = engine(x).float().pow(2).mean()
            engine.backward(scaled_for_backward(loss, engine.optimizer, "fp16", GAS) if fixed else loss)
            engine.step()
        scales.append(float(engine.optimizer.cur_scale if stage else engine.optimizer.loss_scale_config.cur_scale))
    params = [p.detach().float().flatten().tolist() for p in model.parameters()]
    return {"stage": stage, "fixed": fixed, "optimizer": type(engine.optimizer).__name__, "scales": scales,
            "skipped": int(engine.skipped_steps), "params": params}


def main(port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    get_accelerator().is_fp16_supported = lambda: True
    for stage, fixed in ((0, False), (0, True), (1, False), (1, True)):
        print(json.dumps(train(stage, fixed)), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
