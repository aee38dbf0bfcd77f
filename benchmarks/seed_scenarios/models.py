"""Random-weight model folders of a shape (``shapes.py``), built once and shared by the runs that use them."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.seed_scenarios.shapes import SHAPES


def build_model(shape: str, folder: Path) -> dict[str, Any]:
    """Random bf16 weights of ``shape`` (built on the GPU when there is one: seconds, not minutes)."""
    t0 = time.time()
    if (folder / "config.json").exists():
        return {"built": False, "seconds": 0.0}
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from zerotui.core.model.tiny import tiny_tokenizer

    torch.manual_seed(0)
    fields = dict(SHAPES[shape])
    cfg = AutoConfig.for_model(fields.pop("model_type", "llama"), **fields, pad_token_id=0, bos_token_id=1,
                               eos_token_id=2)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    tmp = folder.with_name(folder.name + ".tmp")
    model.save_pretrained(str(tmp), safe_serialization=True, max_shard_size="4GB")
    tiny_tokenizer().save_pretrained(str(tmp))
    os.rename(tmp, folder)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"built": True, "seconds": round(time.time() - t0, 1)}


def build_model_apart(shape: str, folder: Path) -> dict[str, Any]:
    """build_model in a child process. A CUDA context left in the harness would count in NVML's "used"
    of every run after it: on the H200 the harness kept 610 MiB after a build (nvidia-smi's per-process
    figures, benchmarks/results/speed-alloc-qlora-nvidia-smi-apps-2026-12-02.csv)."""
    r = subprocess.run([sys.executable, "-c", "import json, sys; from pathlib import Path; "
                        "from benchmarks.seed_scenarios.models import build_model; "
                        "print(json.dumps(build_model(sys.argv[1], Path(sys.argv[2]))))", shape, str(folder)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-500:]}
    return json.loads(r.stdout.strip().splitlines()[-1])
