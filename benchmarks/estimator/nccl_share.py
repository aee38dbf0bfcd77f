"""How much GPU memory NCCL's communicators take with each way of making DeepSpeed's process groups.
GPU machine only; the GPU must be otherwise idle (NVML's used memory is the device's).

    python -m benchmarks.estimator.nccl_share --out nccl-share.json

A DeepSpeed run uses the default process group and DeepSpeed's clone of it (core/estimate/cuda_context.py).
Each mode runs in a fresh process: a small Llama through ``deepspeed.initialize``, three steps, then
``save_checkpoint`` (whose barrier is on the default group) and one more step, at ZeRO 2 and 3 in bf16;
it records NVML's used memory minus PyTorch's reserved memory (what lives outside the allocator) and the
communicators NCCL's log says were made:

- ``deepspeed``: ``deepspeed.init_distributed()`` alone, as zerotui's worker does (on one GPU DeepSpeed
  0.19 does not bind the device, so each group makes its own communicator when first used);
- ``bound``: ``init_process_group`` with ``device_id`` first, so torch makes DeepSpeed's clone by
  splitting the default group's communicator (``ncclCommSplit``), NCCL_COMM_SPLIT_SHARE_RESOURCES=0;
- ``shared``: the same with NCCL_COMM_SPLIT_SHARE_RESOURCES=1, the split sharing its parent's buffers.

``step_s`` times the first three steps, the first of which makes DeepSpeed's communicators in the
``deepspeed`` mode: not comparable across modes.

Run on 2026-12-03 (benchmarks/results/nccl-share-2026-12-03.json): ``shared`` held 2.15 GiB outside the
allocator against 2.28 for the other two; docs/estimator.md ("The CUDA context") says why zerotui kept
DeepSpeed's way.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.estimator.context import _outside

MODES = ("deepspeed", "bound", "shared")
STAGES = (2, 3)


def child(mode: str, stage: int) -> None:
    import deepspeed
    import pynvml
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from zerotui.core.train.distributed import free_port

    pynvml.nvmlInit()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", LOCAL_RANK="0",
                      WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
    t0 = time.perf_counter()
    if mode != "deepspeed":
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl", device_id=device)
    deepspeed.init_distributed()
    init_s = time.perf_counter() - t0
    cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024)
    model = LlamaForCausalLM(cfg)
    ds = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True,
          "bf16": {"enabled": True}, "gradient_clipping": 1.0, "steps_per_print": 1000000}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    engine, *_ = deepspeed.initialize(model=model, optimizer=opt, config=ds)
    ids = torch.randint(0, 32000, (4, 1024), device=engine.device)

    def step() -> None:
        loss = engine(input_ids=ids, labels=ids).loss
        engine.backward(loss)
        engine.step()

    t1 = time.perf_counter()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    steps_s = (time.perf_counter() - t1) / 3
    with tempfile.TemporaryDirectory() as tmp:
        engine.save_checkpoint(tmp, tag="t")
    step()
    row = {"mode": mode, "stage": stage, **_outside(),  # NVML used, reserved, and their difference
           "split_share_env": os.environ.get("NCCL_COMM_SPLIT_SHARE_RESOURCES"),
           "init_s": round(init_s, 2), "step_s": round(steps_s, 3)}
    print("ROW " + json.dumps(row), flush=True)
    torch.distributed.destroy_process_group()
    print("DESTROYED", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", nargs=2)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]))
        return 0
    import torch

    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv),
           "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                        "nccl": ".".join(map(str, torch.cuda.nccl.version()))},
           "gpu": torch.cuda.get_device_name(0), "rows": []}
    for stage in STAGES:
        for mode in MODES:
            env = dict(os.environ, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT")
            env.pop("NCCL_COMM_SPLIT_SHARE_RESOURCES", None)
            if mode != "deepspeed":
                env["NCCL_COMM_SPLIT_SHARE_RESOURCES"] = "1" if mode == "shared" else "0"
            try:
                r = subprocess.run([sys.executable, "-m", "benchmarks.estimator.nccl_share", "--child", mode,
                                    str(stage)], env=env, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired as err:  # a hung communicator is a result too
                out["rows"].append({"mode": mode, "stage": stage, "error": f"no result in {err.timeout:.0f} s"})
                print(json.dumps(out["rows"][-1]), flush=True)
                continue
            log = r.stdout + r.stderr
            row = next((json.loads(l[4:]) for l in r.stdout.splitlines() if l.startswith("ROW ")),
                       {"mode": mode, "stage": stage, "error": log[-2000:]})
            row["rc"] = r.returncode
            row["destroyed"] = "DESTROYED" in r.stdout
            row["nccl_init_complete"] = log.count("Init COMPLETE")
            row["nccl_split_lines"] = [l.split("NCCL INFO", 1)[-1].strip() for l in log.splitlines()
                                       if "NCCL INFO" in l and ("Split" in l or "split" in l)][:4]
            row["nccl_init_lines"] = [l.split("NCCL INFO", 1)[-1].strip() for l in log.splitlines()
                                      if "NCCL INFO" in l and "Init COMPLETE" in l][:4]
            out["rows"].append(row)
            print(json.dumps({k: row.get(k) for k in ("mode", "stage", "outside_gib", "reserved_gib",
                                                      "nccl_init_complete", "rc", "destroyed", "step_s",
                                                      "error")}), flush=True)
            if a.out:  # after every row, so a later hang loses nothing
                a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
