"""Peak host RAM and wall time of `zerotui merge` (a LoRA merge) against the model's size in its dtype.

Self-contained: builds a random-weight Llama of the chosen --shape and a random LoRA adapter (PEFT,
``init_lora_weights=False`` so the merge changes every targeted weight) into --work, writes a zerotui
run folder around them, then runs ``zerotui merge`` as a child process, sampling its RSS with psutil
every 50 ms and reading its ``ru_maxrss`` when it ends. Prints one JSON object (date, command, versions).

    python benchmarks/merge_rss.py --shape 1.1b --dtype bf16 --work /tmp/merge-bench
    python benchmarks/merge_rss.py --shape 7b --dtype bf16 --work /big/disk/merge-bench   # ~14 GB disk x3
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

# hidden, layers, heads, kv heads, MLP width, vocab: TinyLlama-1.1B and Llama-2-7B's configs
SHAPES = {"1.1b": (2048, 22, 32, 4, 5632, 32000), "7b": (4096, 32, 32, 32, 11008, 32000)}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


def build(work: Path, shape: str, dtype: str) -> Path:
    """base/ (random weights, the tiny tokenizer) and run/ (plan.yaml, final/ = the adapter)."""
    import torch
    import yaml
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM
    from zerotui.core.model.tiny import tiny_tokenizer

    hidden, layers, heads, kv, mlp, vocab = SHAPES[shape]
    base, run = work / "base", work / "run"
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    if not (base / "config.json").exists():
        cfg = LlamaConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                          num_key_value_heads=kv, intermediate_size=mlp, vocab_size=vocab,
                          max_position_embeddings=2048, tie_word_embeddings=False)
        torch.manual_seed(0)
        with torch.device("meta"):
            model = LlamaForCausalLM(cfg)
        model = model.to_empty(device="cpu").to(torch_dtype)
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.02)
        model.save_pretrained(str(base))
        tiny_tokenizer().save_pretrained(str(base))
        peft = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=TARGETS,
                                                init_lora_weights=False, task_type="CAUSAL_LM"))
        shutil.rmtree(run, ignore_errors=True)
        peft.save_pretrained(str(run / "final"))
        del model, peft
    (run / "checkpoints").mkdir(parents=True, exist_ok=True)
    plan = {"model": str(base), "data": "sample", "method": "lora", "lora_r": 16, "lora_alpha": 32,
            "lora_targets": TARGETS, "precision": dtype, "seq_len": 128, "micro_batch": 1, "max_steps": 1}
    (run / "plan.yaml").write_text(yaml.safe_dump(plan), encoding="utf-8")
    return run


def measure(cmd: list[str]) -> dict:
    import psutil

    peak = [0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = psutil.Process(proc.pid)

    def sample() -> None:
        while proc.poll() is None:
            try:
                peak[0] = max(peak[0], ps.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.05)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    t.join()
    # ru_maxrss (KiB on Linux) covers every child waited for: the merge is the only one
    maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return {"returncode": proc.returncode, "wall_s": round(wall, 1), "peak_rss_sampled": peak[0],
            "ru_maxrss": maxrss, "stdout": out.strip()[-4000:], "stderr_tail": err.strip()[-600:]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1.1b")
    ap.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    ap.add_argument("--work", type=Path, required=True, help="folder for the model, adapter and output")
    ap.add_argument("--max-shard-size", default="2GB")
    args = ap.parse_args()
    # DeepSpeed (imported by peft) logs to stdout when first imported; stdout is for the one JSON object.
    with contextlib.redirect_stdout(sys.stderr):
        import peft
        import psutil
        import torch
        import transformers

        t0 = time.perf_counter()
        run = build(args.work, args.shape, args.dtype)
        build_s = time.perf_counter() - t0
    out = args.work / "merged"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "zerotui.cli.main", "merge", str(run), "-o", str(out), "--dtype", args.dtype,
           "--max-shard-size", args.max_shard_size, "--json"]
    result = measure(cmd)
    model_bytes = sum(p.stat().st_size for p in (args.work / "base").glob("*.safetensors"))
    merged = json.loads(result.pop("stdout")) if result["returncode"] == 0 else None
    print(json.dumps({
        "benchmark": "merge_rss", "date": datetime.date.today().isoformat(),
        "command": " ".join(["python", "benchmarks/merge_rss.py", *sys.argv[1:]]), "merge_command": cmd[2:],
        "shape": args.shape, "dtype": args.dtype, "model_bytes_in_dtype": model_bytes,
        "peak_rss_over_model": round(max(result["ru_maxrss"], result["peak_rss_sampled"]) / model_bytes, 3),
        "build_s": round(build_s, 1), **result, "merge_result": merged,
        "machine": {"cpus": os.cpu_count(), "ram_total": psutil.virtual_memory().total, "platform": platform.platform()},
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "peft": peft.__version__},
    }, indent=2))
    return 0 if result["returncode"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
