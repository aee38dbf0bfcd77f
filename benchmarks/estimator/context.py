"""What the GPU holds outside PyTorch's allocator (the "CUDA context"), piece by piece. GPU machine only.

    python -m benchmarks.estimator.context --out context.json

The estimator adds a fixed CUDA context to PyTorch's peak reserved memory. Measured through zerotui's
worker that figure (NVML's used minus the peak reserved) came out at two distinct values, ~1.9 and
~2.28 GiB, with nothing in the plans separating them. This finds what the difference is:

- ``steps``: one fresh process adds one thing at a time (a CUDA tensor, bf16 and fp16 matrix multiplies,
  scaled-dot-product attention forward and backward, an NCCL process group and a collective on it, a
  Triton kernel, a bitsandbytes 4-bit matmul) and records, after each, the device's used memory (NVML)
  minus PyTorch's reserved memory;
- ``engines``: fresh processes each run a small Llama through ``deepspeed.initialize`` and three steps
  with one ds_config each (bf16 / fp16, ZeRO 0 / 2 / 3), with NCCL's log on, and record the same figure
  and whether NCCL created a communicator.

The machine must be otherwise idle (NVML's used memory is the device's, not the process's).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

GIB = 1024**3


def _outside() -> dict:
    import pynvml
    import torch

    torch.cuda.synchronize()
    used = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).used
    reserved = torch.cuda.memory_reserved()
    return {"nvml_used_gib": round(used / GIB, 3), "reserved_gib": round(reserved / GIB, 3),
            "outside_gib": round((used - reserved) / GIB, 3)}


def steps_child() -> None:
    import pynvml
    import torch
    import torch.nn.functional as F

    pynvml.nvmlInit()
    rows = []

    def rec(name: str) -> None:
        rows.append({"after": name, **_outside()})
        print(json.dumps(rows[-1]), flush=True)

    x = torch.zeros(1, device="cuda")
    rec("a CUDA tensor")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    (a @ a).sum().item()
    rec("bf16 matmul (cuBLAS)")
    h = a.half()
    (h @ h).sum().item()
    rec("fp16 matmul")
    q = torch.randn(4, 16, 1024, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
    rec("sdpa causal fwd+bwd bf16 (flash)")
    m = torch.ones(4, 1, 1024, 1024, device="cuda", dtype=torch.bool).tril()
    F.scaled_dot_product_attention(q, q, q, attn_mask=m).sum().backward()
    rec("sdpa with a mask fwd+bwd bf16")
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533", RANK="0", WORLD_SIZE="1")
    dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
    rec("NCCL process group (device_id given)")
    t = torch.ones(1024, device="cuda")
    dist.all_reduce(t)
    rec("NCCL all_reduce")
    dist.all_reduce(torch.ones(1 << 24, device="cuda", dtype=torch.bfloat16))
    rec("NCCL all_reduce 32 MB bf16")
    try:
        from liger_kernel.transformers.rms_norm import LigerRMSNorm

        n = LigerRMSNorm(4096).cuda().to(torch.bfloat16)
        n(torch.randn(8, 1024, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)).sum().backward()
        rec("Liger RMSNorm fwd+bwd (Triton)")
    except ImportError as e:
        rows.append({"after": "Liger RMSNorm", "skipped": str(e)})
    try:
        import bitsandbytes as bnb

        lin = bnb.nn.Linear4bit(4096, 4096, compute_dtype=torch.bfloat16, quant_type="nf4").cuda()
        lin(torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)).sum().item()
        rec("bitsandbytes 4-bit linear")
    except ImportError as e:
        rows.append({"after": "bitsandbytes", "skipped": str(e)})
    dist.destroy_process_group()
    del x
    print("ROWS " + json.dumps(rows), flush=True)


def engine_child(precision: str, stage: int) -> None:
    import deepspeed
    import pynvml
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    pynvml.nvmlInit()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29534", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    deepspeed.init_distributed()
    cfg = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=1024)
    model = LlamaForCausalLM(cfg)
    ds = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
          "zero_optimization": {"stage": stage}, "zero_allow_untested_optimizer": True,
          "bf16": {"enabled": precision == "bf16"}, "fp16": {"enabled": precision == "fp16"},
          "gradient_clipping": 1.0, "steps_per_print": 1000000}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    engine, *_ = deepspeed.initialize(model=model, optimizer=opt, config=ds)
    ids = torch.randint(0, 32000, (4, 1024), device=engine.device)
    for _ in range(3):
        loss = engine(input_ids=ids, labels=ids).loss
        engine.backward(loss)
        engine.step()
    row = {"precision": precision, "stage": stage, **_outside(),
           "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / GIB, 3)}
    print("ROW " + json.dumps(row), flush=True)


def _run(args: list[str], env: dict) -> tuple[str, str]:
    r = subprocess.run([sys.executable, "-m", "benchmarks.estimator.context", *args], env=env,
                       capture_output=True, text=True, timeout=300)
    return r.stdout, r.stderr


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", nargs="*")
    a = ap.parse_args()
    if a.child:
        if a.child[0] == "steps":
            steps_child()
        else:
            engine_child(a.child[1], int(a.child[2]))
        return 0
    import torch

    out = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv),
           "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                        "nccl": ".".join(map(str, torch.cuda.nccl.version()))},
           "gpu": torch.cuda.get_device_name(0)}
    env = dict(os.environ, NCCL_DEBUG="INFO")
    so, se = _run(["--child", "steps"], env)
    out["steps"] = next((json.loads(l[5:]) for l in so.splitlines() if l.startswith("ROWS ")), {"error": se[-1500:]})
    out["engines"] = []
    for precision, stage in (("bf16", 0), ("bf16", 2), ("fp16", 2), ("bf16", 3), ("fp16", 3)):
        so, se = _run(["--child", "engine", precision, str(stage)], env)
        row = next((json.loads(l[4:]) for l in so.splitlines() if l.startswith("ROW ")), {"error": se[-1500:]})
        log = so + se
        row["nccl_comm_init"] = log.count("Init COMPLETE") + log.count("ncclCommInitRank")
        row["nccl_lines"] = [l for l in log.splitlines() if "NCCL INFO" in l and ("Init" in l or "comm" in l)][:6]
        out["engines"].append(row)
        print(json.dumps({k: row.get(k) for k in ("precision", "stage", "outside_gib", "nccl_comm_init", "error")}), flush=True)
    for r in out["steps"] if isinstance(out["steps"], list) else []:
        print(json.dumps(r))
    if a.out:
        a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
