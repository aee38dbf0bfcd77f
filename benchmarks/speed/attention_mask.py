"""What a micro-batch's attention mask costs on the GPU: the same forward and backward of a random-weight
Llama with (a) no padding (transformers passes SDPA no mask and ``is_causal``), (b) right padding of a
few tokens in one row (a 2-D ``attention_mask`` with zeros: transformers builds a 4-D mask for SDPA), and
(c) packed documents (no mask, ``position_ids`` restarting: transformers builds the block-diagonal
mask). Each variant's timed steps alternate with the others' (the machine is shared), and one step of
each is profiled for the attention kernels CUDA ran.

    python -m benchmarks.speed.attention_mask --out R.json [--shape 1b128k] [--batch 1x4096 --batch 2x4096]

Written for the question ``docs/packing.md`` left open: whether padding a micro-batch, which moves
transformers off SDPA's causal path, is what made zerotui's worker run 4,096-token plans several times
slower than the estimator sweep's harness, whose rows were never padded.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

VARIANTS = ("causal", "padded", "packed")
PAD = 8          # pad tokens in the padded variant's first row (collate pads to a multiple of 8)


def inputs(variant: str, rows: int, width: int, vocab: int, device: str) -> dict[str, Any]:
    """The model's inputs for one variant, as zerotui's collate / collate_packed would build them."""
    import torch

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, vocab, (rows, width), generator=g)
    labels = ids.clone()
    batch: dict[str, Any] = {}
    if variant == "padded":
        mask = torch.ones((rows, width), dtype=torch.long)
        mask[0, -PAD:] = 0
        labels[0, -PAD:] = -100
        batch["attention_mask"] = mask
    elif variant == "packed":  # two documents a row
        half = width // 2
        pos = torch.cat([torch.arange(half), torch.arange(width - half)]).repeat(rows, 1)
        labels[:, half] = -100
        batch["position_ids"] = pos
    else:
        batch["attention_mask"] = torch.ones((rows, width), dtype=torch.long)
    batch.update(input_ids=ids, labels=labels)
    return {k: v.to(device) for k, v in batch.items()}


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def attention_kernels(model, batch: dict[str, Any]) -> list[str]:
    """Names of the CUDA kernels of one forward and backward that look like attention."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        model(**batch).loss.backward()
        sync()
    keys = ("attn", "attention", "fmha", "flash", "softmax", "cudnn")
    names = {e.key for e in prof.key_averages() if any(k in e.key.lower() for k in keys)}
    return sorted(n[:120] for n in names)


def sdpa_call(model, batch: dict[str, Any]) -> dict[str, Any]:
    """What transformers passed to SDPA in one forward: the mask's shape (None: no mask) and is_causal."""
    import torch

    seen: dict[str, Any] = {}
    real = torch.nn.functional.scaled_dot_product_attention

    def record(*args, **kwargs):
        if not seen:
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            seen.update(mask=None if mask is None else list(mask.shape), is_causal=bool(kwargs.get("is_causal")))
        return real(*args, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = record
    try:
        with torch.no_grad():
            model(**batch)
    finally:
        torch.nn.functional.scaled_dot_product_attention = real
    return seen


def new_widths(model, vocab: int, device: str, rows: int, widths: list[int], cudnn: bool) -> dict[str, Any]:
    """Steps whose micro-batch width changes every step, as unpacked real data does: each width's first
    step, then a second pass over the same widths. A kernel library that plans per shape (cuDNN's SDPA
    builds an execution graph for each new one) pays on first sight only."""
    import torch

    torch.backends.cuda.enable_cudnn_sdp(cudnn)
    first, again = [], []
    try:
        for timings in (first, again):
            for w in widths:
                batch = inputs("padded" if rows > 1 else "causal", rows, w, vocab, device)
                sync()
                t0 = time.perf_counter()
                model(**batch).loss.backward()
                sync()
                timings.append(time.perf_counter() - t0)
                model.zero_grad(set_to_none=True)
    finally:
        torch.backends.cuda.enable_cudnn_sdp(True)
    return {"rows": rows, "cudnn_sdp": cudnn, "widths": widths, "first_s": first, "again_s": again,
            "first_median_s": statistics.median(first), "again_median_s": statistics.median(again)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shape", default="1b128k")
    ap.add_argument("--batch", action="append", help="ROWSxWIDTH (default 1x4096, 2x4096, 8x1024)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--new-widths", type=int, default=0, help="also N steps of unseen widths, cuDNN on and off")
    a = ap.parse_args()
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    from benchmarks.seed_scenarios.shapes import SHAPES

    fields = dict(SHAPES[a.shape])
    cfg = AutoConfig.for_model(fields.pop("model_type", "llama"), **fields, pad_token_id=0, bos_token_id=1,
                               eos_token_id=2, use_cache=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU only to try the script
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.train()
    shapes = [tuple(int(x) for x in b.split("x")) for b in (a.batch or ["1x4096", "2x4096", "8x1024"])]
    result: dict[str, Any] = {"command": " ".join(["python -m benchmarks.speed.attention_mask", *sys.argv[1:]]),
                              "date": time.strftime("%Y-%m-%d"), "shape": a.shape, "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
                              "transformers": transformers.__version__, "pad_tokens": PAD, "runs": []}
    for rows, width in shapes:
        batches = {v: inputs(v, rows, width, cfg.vocab_size, device) for v in VARIANTS}
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        peaks: dict[str, int] = {}
        for v in VARIANTS:  # warm-up, and the peak of each variant's step
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            model(**batches[v]).loss.backward()
            model.zero_grad(set_to_none=True)
            sync()
            peaks[v] = torch.cuda.max_memory_allocated() if device == "cuda" else 0
        for _ in range(a.steps):
            for v in VARIANTS:
                sync()
                t0 = time.perf_counter()
                model(**batches[v]).loss.backward()
                sync()
                times[v].append(time.perf_counter() - t0)
                model.zero_grad(set_to_none=True)
        kernels = {v: attention_kernels(model, batches[v]) for v in VARIANTS}
        calls = {v: sdpa_call(model, batches[v]) for v in VARIANTS}
        model.zero_grad(set_to_none=True)
        for v in VARIANTS:
            med = statistics.median(times[v])
            row = {"rows": rows, "width": width, "variant": v, "step_s_median": med,
                   "step_s_all": times[v], "tokens_per_s": rows * width / med,
                   "peak_allocated": peaks[v], "attention_kernels": kernels[v], "sdpa": calls[v]}
            result["runs"].append(row)
            print(f"{rows}x{width} {v:7s} {med * 1e3:8.1f} ms/step  {rows * width / med:9.0f} tok/s  "
                  f"peak {peaks[v] / 2**30:6.2f} GiB  sdpa {calls[v]}  {kernels[v][:4]}", flush=True)
        del batches
    result["new_widths"] = []
    top = max(w for _, w in shapes)
    for i, (rows, cudnn) in enumerate(((1, True), (1, False), (2, True), (2, False))):
        if not a.new_widths:
            break
        # widths no earlier step has seen: distinct multiples of 8 below the longest, one set per run
        widths = [top - 8 * (1 + i + 4 * k) for k in range(a.new_widths)]
        r = new_widths(model, cfg.vocab_size, device, rows, widths, cudnn)
        result["new_widths"].append(r)
        print(f"new widths {rows} row(s), cuDNN SDPA {'on ' if cudnn else 'off'}: first sight "
              f"{r['first_median_s'] * 1e3:7.1f} ms/step, again {r['again_median_s'] * 1e3:7.1f} ms/step", flush=True)
    Path(a.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
