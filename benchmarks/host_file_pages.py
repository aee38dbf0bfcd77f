"""Where a loaded model's weights sit in host memory: the process's own pages (RssAnon) or the file's
(RssFile), after loading and after one forward/backward, for a folder of safetensors loaded the way
zerotui's loader does (core/model/load.py: from_pretrained, low_cpu_mem_usage) in a given dtype.

    python benchmarks/host_file_pages.py FOLDER [bf16|fp16|fp32]

Prints /proc/self/status's figures at each point and whether the weights file is mapped into the
process (/proc/self/maps). Linux only."""
from __future__ import annotations

import re
import sys


def rss() -> dict[str, int]:
    status = open("/proc/self/status").read()
    return {k: int(re.search(k + r":\s+(\d+)", status).group(1)) // 1024 for k in ("RssAnon", "RssFile", "RssShmem")}


def main(folder: str, dtype_name: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    print("before loading (MiB)", rss())
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, low_cpu_mem_usage=True)
    weights = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    print(f"loaded in {dtype_name} (MiB)", rss(), f"weights {weights:.0f} MiB")
    model(torch.randint(0, 1000, (1, 128))).logits.float().sum().backward()
    print("after one forward/backward (MiB)", rss())
    mapped = [line.split()[1] + " " + line.split()[-1] for line in open("/proc/self/maps") if ".safetensors" in line]
    print("safetensors mapped:", mapped or "none")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "bf16")
