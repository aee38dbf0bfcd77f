"""Run as ``python tests/helpers/mmap_resume.py STAGE PORT``: a real DeepSpeed engine on the CPU trains two
steps, saves, and a second engine loads the checkpoint through ``mapped_loads``; prints one JSON line:
how many mappings of the checkpoint's files are left and whether the restored state equals the saved.
Its own process: DeepSpeed's process group and accelerator state stay out of pytest's."""
import gc
import json
import os
import sys
import tempfile

import deepspeed
import torch

from zerotui.core.train.mmap_load import mapped_loads, mapped_ranges


def make(stage: int):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    cfg = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": stage},
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}}}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    return engine


def _moments(engine):
    opt = engine.optimizer
    while getattr(opt, "optimizer", None) is not None:
        opt = opt.optimizer
    return [t.clone() for s in opt.state.values() for k, t in sorted(s.items()) if k.startswith("exp_avg")]


def main(stage: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    first = make(stage)
    for _ in range(2):
        loss = first(torch.randn(4, 64)).pow(2).mean()
        first.backward(loss)
        first.step()
    folder = tempfile.mkdtemp(prefix="zt-mmap-")
    first.save_checkpoint(folder, tag="step2")
    saved = _moments(first)
    files = [os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs if f.endswith(".pt")]
    second = make(stage)
    with mapped_loads(second):
        second.load_checkpoint(folder, tag="step2")
    gc.collect()
    restored = _moments(second)
    print(json.dumps({"mappings_left": len(mapped_ranges(files)), "moments": len(saved),
                      "equal": len(saved) == len(restored) and all(torch.equal(a, b) for a, b in zip(saved, restored))}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
    sys.stdout.flush()
    os._exit(0)  # gloo's threads left to the interpreter's exit can abort it after the result (optimizer_states.py)
