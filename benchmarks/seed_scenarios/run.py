"""The jobs users bring, run through the product on one GPU under a memory cap.

    python -m benchmarks.seed_scenarios.run --out results.json --cap 24GiB \
        --scenario 7b-lora-fit --scenario 7b-lora-seed --scenario 7b-qlora-fit --scenario 7b-qlora-seed
    python -m benchmarks.seed_scenarios.run --dry-run          # the tiny shape on the CPU, to test the harness

Each scenario is a plan (as the seed guide writes it, or as ``zerotui fit`` picks it for the capped card)
trained by ``zerotui train PLAN --foreground`` (the real supervisor, worker and DeepSpeed engine) on a
random-weight model folder of the named shape, built once per shape (weights do not change memory or
speed). Reported per scenario: the estimate against the measured peak (the worker's
``torch.cuda.max_memory_reserved`` plus the CUDA context the estimator assumes, and NVML's used memory),
tokens/s and model-FLOPs utilisation (docs/seed_scenarios.md has the FLOP count), the fp16 loss scale as
it moved, and start-up to the first step.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

SHAPES: dict[str, dict[str, Any]] = {
    # Llama-2's published architectures (config.json of meta-llama/Llama-2-{7,13}b-hf).
    "7b": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
               rms_norm_eps=1e-5, tie_word_embeddings=False),
    "13b": dict(vocab_size=32000, hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                num_attention_heads=40, num_key_value_heads=40, max_position_embeddings=4096,
                rms_norm_eps=1e-5, tie_word_embeddings=False),
    # TinyLlama-1.1B's architecture (its config.json), the 1.1B full fine-tune of benchmarks/speed.
    # Llama-3.2-3B's architecture (its config.json): tied 128,256-word embeddings, grouped-query attention.
    "3b": dict(vocab_size=128256, hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
               num_attention_heads=24, num_key_value_heads=8, max_position_embeddings=131072,
               rms_norm_eps=1e-5, tie_word_embeddings=True, rope_theta=500000.0),
    "1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
               num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
               rms_norm_eps=1e-5, tie_word_embeddings=False),
    # Qwen2.5-1.5B's architecture (its config.json): no Llama shape has its tied 151,936-word embeddings
    # or its biased q/k/v projections (held out of the estimator's fit, 2026-12-03, fifth session).
    "q1.5b": dict(model_type="qwen2", vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                  num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                  max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True),
    # The same with an untied head: whether the tied embedding, whose two gradients meet at the end of
    # each backward, is what q1.5b-full-fit held beyond the estimate (2026-12-03, sixth session).
    "q1.5bu": dict(model_type="qwen2", vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                   num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                   max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=False),
    # Llama-3.2-1B's architecture (its config.json): the estimator sweeps' llama-1b-128k shape, whose
    # 128,256-word logits dominate (2026-12-04, ninth session: the sweeps' over-estimated plans again,
    # through zerotui's worker).
    "1b128k": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                   num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                   rms_norm_eps=1e-5, tie_word_embeddings=True, rope_theta=500000.0),
    # The estimator sweeps' llama-2b-49k (GQA 20/4, 49k vocabulary) and, below the table, llama-7b-l8: two of
    # their rows still over the band, through zerotui's worker (2026-12-06, twenty-seventh session).
    "2b-49k": dict(vocab_size=49152, hidden_size=2560, intermediate_size=6912, num_hidden_layers=24,
                   num_attention_heads=20, num_key_value_heads=4, max_position_embeddings=4096,
                   rms_norm_eps=1e-5, tie_word_embeddings=False),
    # The estimator sweeps' llama-0.1b: big enough that every matrix passes DeepSpeed's 1 MiB NVMe swap
    # threshold, small enough for this harness's CPU dry run (NVMe swap sizes, 2026-12-05).
    "0.1b": dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                 num_attention_heads=12, num_key_value_heads=12, max_position_embeddings=2048,
                 rms_norm_eps=1e-5, tie_word_embeddings=False),
    "tiny": dict(vocab_size=1024, hidden_size=128, intermediate_size=352, num_hidden_layers=4,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                 rms_norm_eps=1e-5, tie_word_embeddings=False),
}
# Llama-2-7B's width with 8 of its 32 layers (the sweeps' llama-7b-l8)
SHAPES["7b-l8"] = {**SHAPES["7b"], "num_hidden_layers": 8}
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
SEED_BATCH = dict(micro_batch=2, grad_accum=8, seq_len=1024, grad_ckpt=True)
#: name -> (shape, plan fields, pick): "seed" runs the plan as the seed guide writes it; "fit" runs the
#: first plan `zerotui fit` recommends for it on the capped card.
SCENARIOS: dict[str, tuple[str, dict[str, Any], str]] = {
    "7b-lora-seed": ("7b", dict(method="lora", precision="fp16", stage=3, offload_optimizer="cpu", **SEED_BATCH), "seed"),
    "7b-lora-fit": ("7b", dict(method="lora", precision="bf16", stage=3, offload_optimizer="cpu", **SEED_BATCH), "fit"),
    # The seed's QLoRA + ZeRO-3, in fp16 (any card): its loss scale must move like LoRA's.
    "7b-qlora-seed": ("7b", dict(method="qlora", precision="fp16", stage=3, lora_targets=ALL_LINEAR, **SEED_BATCH), "seed"),
    "7b-qlora-fit": ("7b", dict(method="qlora", precision="bf16", stage=3, lora_targets=ALL_LINEAR, **SEED_BATCH), "fit"),
    "13b-qlora-fit": ("13b", dict(method="qlora", precision="bf16", stage=3, lora_targets=ALL_LINEAR, **SEED_BATCH), "fit"),
    "13b-qlora-seed": ("13b", dict(method="qlora", precision="bf16", stage=3, lora_targets=ALL_LINEAR, **SEED_BATCH), "seed"),
    # fp16 LoRA started at 2^32 (fp16_initial_scale_power): the first steps must overflow, be skipped and
    # halve the scale until the gradients fit; no collapse alert (the scale stays far above its floor).
    "7b-lora-fp16-overflow": ("7b", dict(method="lora", precision="fp16", stage=2, offload_optimizer="cpu",
                                         fp16_initial_scale_power=32, micro_batch=8, grad_accum=2, seq_len=1024,
                                         grad_ckpt=True, max_steps=24, log_interval=2), "seed"),
    # A plan the budget says does not fit the cap (no checkpointing, micro-batch 16), forced: the run must
    # end as an out-of-memory failure under the cap, reported like any OOM.
    "7b-lora-oom": ("7b", dict(method="lora", precision="bf16", stage=0, micro_batch=16, grad_accum=1,
                               seq_len=1024, grad_ckpt=False, max_steps=4, log_interval=1), "seed"),
    # Held out from the estimator's fitting (measured before its ZeRO-3 terms were revisited): the seed's
    # ZeRO-3 plans at another micro-batch.
    "7b-lora-seed-mb4": ("7b", dict(method="lora", precision="fp16", stage=3, offload_optimizer="cpu", micro_batch=4,
                                    grad_accum=2, seq_len=1024, grad_ckpt=True, max_steps=5, log_interval=1), "seed"),
    "7b-qlora-seed-mb4": ("7b", dict(method="qlora", precision="fp16", stage=3, lora_targets=ALL_LINEAR, micro_batch=4,
                                     grad_accum=2, seq_len=1024, grad_ckpt=True, max_steps=5, log_interval=1), "seed"),
    # Held out from the margin's fit (core/estimate/margin.py, fitted 2026-12-01 before any of these ran):
    # each leans on one of its terms. Run them and report the errors; do not refit on them.
    "7b-lora-ho1": ("7b", dict(method="lora", precision="bf16", stage=2, kernels="none", micro_batch=4, grad_accum=2,
                               seq_len=2048, grad_ckpt=True, max_steps=6, log_interval=1), "seed"),  # loss + recompute at 2k
    "7b-qlora-ho2": ("7b", dict(method="qlora", precision="bf16", stage=0, kernels="auto", lora_targets=ALL_LINEAR,
                                micro_batch=8, grad_accum=2, seq_len=2048, grad_ckpt=True, max_steps=6,
                                log_interval=1), "seed"),  # Liger's chunked loss, QLoRA recompute
    "13b-qlora-ho3": ("13b", dict(method="qlora", precision="bf16", stage=2, kernels="none", lora_targets=ALL_LINEAR,
                                  lora_r=64, micro_batch=4, grad_accum=4, seq_len=1024, grad_ckpt=True, max_steps=5,
                                  log_interval=1), "seed"),  # 13B under ZeRO-2, rank 64
    "1b-full-ho4": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="cpu", kernels="none",
                               micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True, max_steps=6,
                               log_interval=1), "seed"),  # full ZeRO-3, weights resident, Adam on the CPU
    "1b-full-ho5": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="cpu", offload_params="cpu",
                               kernels="none", micro_batch=8, grad_accum=1, seq_len=2048, grad_ckpt=True, max_steps=6,
                               log_interval=1), "seed"),  # weights gathered from the CPU: the gather term
    "7b-lora-ho6": ("7b", dict(method="lora", precision="fp16", stage=3, offload_optimizer="cpu", kernels="none",
                               micro_batch=1, grad_accum=2, seq_len=4096, grad_ckpt=True, max_steps=5,
                               log_interval=1), "seed"),  # the seed's ZeRO-3 at 4k tokens: ~1k tokens/s, 8k a step
    # Held out from the CUDA-context rule (core/estimate/cuda_context.py, 2026-12-02, set from the rows
    # above): each predicts one or two NCCL communicators for a plan no row had; estimates written down
    # before they ran (docs/estimator.md, "The CUDA context"). The comments give the prediction; ho8
    # measured two and ho10 one.
    "1b-full-ho7": ("1b", dict(method="full", precision="fp16", stage=2, offload_optimizer="cpu", kernels="none",
                               micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True), "seed"),  # two
    "1b-full-ho8": ("1b", dict(method="full", precision="fp16", stage=2, kernels="none", micro_batch=4, grad_accum=2,
                               seq_len=1024, grad_ckpt=True), "seed"),  # one
    "1b-full-ho9": ("1b", dict(method="full", precision="bf16", stage=3, kernels="none", micro_batch=8, grad_accum=2,
                               seq_len=1024, grad_ckpt=True), "seed"),  # one
    "1b-qlora-ho10": ("1b", dict(method="qlora", precision="bf16", stage=2, kernels="none", lora_targets=ALL_LINEAR,
                                 micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True), "seed"),  # two
    "1b-lora-ho11": ("1b", dict(method="lora", precision="fp16", stage=0, kernels="none", micro_batch=8, grad_accum=2,
                                seq_len=1024, grad_ckpt=False), "seed"),  # one
    # Held out from the expandable-segments margin (calibration.py's EXPANDABLE_*, fitted 2026-12-02 on 13
    # rows): plans of a kind none of those rows had. Their estimates are the ones committed before they ran.
    "1b-full-ho12": ("1b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=8, grad_accum=2,
                                seq_len=1024, grad_ckpt=True), "seed"),  # ZeRO-1, Liger's fused loss
    "1b-full-ho13": ("1b", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=2, grad_accum=4,
                                seq_len=2048, grad_ckpt=False), "seed"),  # bf16 ZeRO-2, no offload, no recompute
    # Held out from the expandable-segments margin as refitted on 23 rows (2026-12-03): written down by
    # benchmarks/seed_scenarios/predict.py before they ran.
    "1b-full-ho14": ("1b", dict(method="full", precision="fp16", stage=1, kernels="none", micro_batch=4, grad_accum=2,
                                seq_len=2048, grad_ckpt=True), "seed"),  # fp16 ZeRO-1
    "1b-full-ho15": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="cpu", offload_params="cpu",
                                kernels="auto", micro_batch=4, grad_accum=2, seq_len=4096, grad_ckpt=True),
                     "seed"),  # ZeRO-3 past 2,048 tokens, where the default allocator needs its floor
    "1b-lora-ho16": ("1b", dict(method="lora", precision="bf16", stage=2, kernels="auto", lora_targets=ALL_LINEAR,
                                lora_r=64, micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=False),
                     "seed"),  # LoRA without recompute, Liger
    # Held out from the expandable base as refitted to 0.4 GiB (2026-12-03, last): ZeRO-1 with the optimizer on
    # the CPU, the kind the sweep row that forced the refit (w8-s1-cpu-mb2) is, through zerotui's worker,
    # without and with Liger. Written down by predict.py before they ran.
    "1b-full-ho17": ("1b", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu", kernels="none",
                                micro_batch=4, grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    "1b-full-ho18": ("1b", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu", kernels="auto",
                                micro_batch=4, grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    # Held out from the first-step rule (core/estimate/margin.py, first_step_term) and from stage 0's
    # gradients, which autograd makes weight by weight as backward frees activations (gpu.py): ZeRO-0 and
    # ZeRO-2 full fine-tunes through zerotui's worker with Liger. Written down by predict.py before they ran.
    "1b-full-ho19": ("1b", dict(method="full", precision="bf16", stage=0, kernels="auto", micro_batch=8, grad_accum=1,
                                seq_len=2048, grad_ckpt=False), "seed"),
    "1b-full-ho20": ("1b", dict(method="full", precision="bf16", stage=2, kernels="auto", micro_batch=8, grad_accum=1,
                                seq_len=2048, grad_ckpt=False), "seed"),
    "1b-full-ho21": ("1b", dict(method="full", precision="fp16", stage=2, kernels="auto", micro_batch=6, grad_accum=1,
                                seq_len=2048, grad_ckpt=False), "seed"),
    # Held out from everything the estimator was fitted on (2026-12-03, fifth session): a Qwen2 shape,
    # full and LoRA, each as `fit` picks it for a 24 GiB card. Written down by predict.py before they ran.
    "q1.5b-full-fit": ("q1.5b", dict(method="full", precision="bf16", stage=2, micro_batch=4, grad_accum=4,
                                     seq_len=2048, grad_ckpt=True), "fit"),
    "q1.5b-lora-fit": ("q1.5b", dict(method="lora", precision="bf16", stage=2, lora_targets=ALL_LINEAR,
                                     micro_batch=4, grad_accum=4, seq_len=2048, grad_ckpt=True), "fit"),
    # Held out from the first-step share (calibration.py's EXPANDABLE_FIRST_STEP_SHARE, 2026-12-03, sixth
    # session): ZeRO-1/2 full fine-tunes whose first step grows the segment, through zerotui's worker,
    # which now makes Adam's state at start; the untied twin of q1.5b-full-fit; QLoRA on the Qwen2 shape.
    # Written down by predict.py before they ran.
    "1b-full-ho22": ("1b", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=1, grad_accum=4,
                                seq_len=4096, grad_ckpt=True), "seed"),
    "1b-full-ho23": ("1b", dict(method="full", precision="fp16", stage=2, kernels="auto", micro_batch=2, grad_accum=2,
                                seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho24": ("1b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=2, grad_accum=4,
                                seq_len=2048, grad_ckpt=False), "seed"),
    "q1.5b-full-ho25": ("q1.5b", dict(method="full", precision="bf16", stage=2, kernels="auto", micro_batch=2,
                                      grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
    "q1.5bu-full-fit": ("q1.5bu", dict(method="full", precision="bf16", stage=2, micro_batch=4, grad_accum=4,
                                       seq_len=2048, grad_ckpt=True), "fit"),
    "q1.5b-qlora-fit": ("q1.5b", dict(method="qlora", precision="bf16", stage=2, lora_targets=ALL_LINEAR,
                                      micro_batch=4, grad_accum=4, seq_len=2048, grad_ckpt=True), "fit"),
    # Held out from the refit that followed counting DeepSpeed's fp64 gradient norm (2026-12-03, sixth
    # session, base 0.1 GiB): ZeRO-2 with the optimizer on the CPU without recompute (the norm's case), and
    # a LoRA and a QLoRA plan of kinds the rows lack. With q1.5b-full-fit and q1.5bu-full-fit as `fit` now
    # picks them. Written down by predict.py before they ran.
    "1b-full-ho26": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="auto",
                                micro_batch=4, grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    "1b-lora-ho27": ("1b", dict(method="lora", precision="bf16", stage=2, kernels="auto", lora_targets=ALL_LINEAR,
                                micro_batch=16, grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-qlora-ho28": ("1b", dict(method="qlora", precision="bf16", stage=0, kernels="auto", lora_targets=ALL_LINEAR,
                                 micro_batch=8, grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    # Held out from a rule that bf16 gradients at ZeRO-0 leave no holes with expandable segments (2026-12-03,
    # seventh session): bf16 ZeRO-0 full fine-tunes with and without the fused loss and recompute, one on
    # the Qwen2 shape, and an fp16 twin. Written down by predict.py before they ran
    # (estimator-stage0-predictions-2026-12-03.txt, with and without the rule). ho31 and ho33 came out 6.3%
    # and 6.9% short with it, and the allocator's history showed why (zerotui's bf16 ZeRO-0 runs through
    # DeepSpeed's FP16_Optimizer, whose gradients churn): the rule was dropped; without it they are
    # -1.0% and -1.5% (docs/estimator.md).
    "1b-full-ho29": ("1b", dict(method="full", precision="bf16", stage=0, kernels="none", micro_batch=8, grad_accum=1,
                                seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho30": ("1b", dict(method="full", precision="bf16", stage=0, kernels="none", micro_batch=4, grad_accum=2,
                                seq_len=2048, grad_ckpt=False), "seed"),
    "1b-full-ho31": ("1b", dict(method="full", precision="bf16", stage=0, kernels="auto", micro_batch=16, grad_accum=1,
                                seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho32": ("1b", dict(method="full", precision="fp16", stage=0, kernels="auto", micro_batch=16, grad_accum=1,
                                seq_len=2048, grad_ckpt=True), "seed"),
    "q1.5b-full-ho33": ("q1.5b", dict(method="full", precision="bf16", stage=0, kernels="auto", micro_batch=4,
                                      grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    # Held out from a rule that ZeRO-1 with the optimizer on the CPU holds its accumulated gradients without
    # holes (2026-12-03, seventh session, from 1b-full-ho18's allocator history): a Qwen2 plan and an fp16
    # 1.1B plan without fused kernels. Written down by predict.py before they ran
    # (estimator-zero1-offload-predictions-2026-12-03.txt). With the rule ho34 came out 6.9% short
    # (ho35 +3.7%), so it was dropped; without it +10.0% and +17.1% (docs/estimator.md).
    "q1.5b-full-ho34": ("q1.5b", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu",
                                      kernels="auto", micro_batch=4, grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho35": ("1b", dict(method="full", precision="fp16", stage=1, offload_optimizer="cpu", kernels="none",
                                micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True), "seed"),
    # Held out from the optimizer step's moment (2026-12-04, eighth session): plans whose step is the
    # peak, of shapes and stages the twelve rows it was read from lack (a 3B shape among them), and
    # plans where the step's moment should set the peak without being the largest allocation.
    # Written down by predict.py before they ran.
    "q1.5b-full-ho36": ("q1.5b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=4,
                                      grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    "q1.5bu-full-ho37": ("q1.5bu", dict(method="full", precision="bf16", stage=2, kernels="auto", micro_batch=2,
                                        grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
    "3b-full-ho38": ("3b", dict(method="full", precision="bf16", stage=2, kernels="auto", micro_batch=2,
                                grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    "3b-full-ho39": ("3b", dict(method="full", precision="bf16", stage=0, kernels="auto", micro_batch=4,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho40": ("1b", dict(method="full", precision="bf16", stage=2, kernels="auto", micro_batch=16,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho41": ("1b", dict(method="full", precision="fp16", stage=1, kernels="none", micro_batch=8,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho42": ("1b", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=8,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    # Held out from the step's moment as refined on 1b-full-ho40-42 (hole doubled only at ZeRO-2 with
    # several micro-batches; the step's own moment where it is the peak of allocation) and from ZeRO-1's
    # flat partition beside the weights' gradients (1b-full-ho24's allocator history). Written down by
    # predict.py before they ran.
    "3b-full-ho43": ("3b", dict(method="full", precision="bf16", stage=2, kernels="auto", micro_batch=4,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "q1.5b-full-ho44": ("q1.5b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=2,
                                      grad_accum=4, seq_len=2048, grad_ckpt=False), "seed"),
    "1b-full-ho45": ("1b", dict(method="full", precision="bf16", stage=1, kernels="none", micro_batch=4,
                                grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    "1b-full-ho46": ("1b", dict(method="full", precision="fp16", stage=1, kernels="auto", micro_batch=4,
                                grad_accum=4, seq_len=2048, grad_ckpt=False), "seed"),
    # The estimator sweeps' plans that the margin over-estimates by more than 5% (2026-12-04, ninth
    # session), run as the sweep wrote them but through zerotui's worker (which makes Adam's state at start,
    # as the sweep's own worker did only in sweep 4): whether the excess is the estimator's or the sweep
    # harness's. The sweep's row in each comment. Written down by predict.py before they ran.
    "1b-full-ho47": ("1b", dict(method="full", precision="bf16", stage=0, kernels="none", micro_batch=16,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),  # a-s0-mb16-ckpt
    "1b-full-ho48": ("1b", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=16,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),  # a-s2-mb16-ckpt
    "1b-full-ho49": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="none",
                                micro_batch=16, grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),  # a-s2-cpu-mb16-ckpt
    "1b-full-ho50": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="none",
                                micro_batch=8, grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),  # a-s2-cpu-mb8-ga2-ckpt
    "1b-full-ho51": ("1b", dict(method="full", precision="fp16", stage=2, kernels="none", micro_batch=8,
                                grad_accum=1, seq_len=4096, grad_ckpt=True), "seed"),  # h-a-s2-fp16-mb8-s4096-ckpt
    "1b128k-lora-ho52": ("1b128k", dict(method="lora", precision="bf16", stage=2, kernels="none", lora_r=64,
                                        lora_targets=ALL_LINEAR, lora_dropout=0.05, micro_batch=8, grad_accum=1,
                                        seq_len=1024, grad_ckpt=True), "seed"),  # v-lora-all-s2-mb8-ckpt
    "1b128k-lora-ho53": ("1b128k", dict(method="lora", precision="bf16", stage=2, kernels="none", lora_dropout=0.0,
                                        micro_batch=8, grad_accum=1, seq_len=1024, grad_ckpt=False), "seed"),  # v-lora-d0-s2-mb8
    "1b128k-lora-ho54": ("1b128k", dict(method="lora", precision="bf16", stage=0, kernels="none", lora_dropout=0.05,
                                        micro_batch=4, grad_accum=1, seq_len=2048, grad_ckpt=False), "seed"),  # v-s0-lora-mb4
    "1b128k-full-ho55": ("1b128k", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=1,
                                        grad_accum=2, seq_len=4096, grad_ckpt=False), "seed"),  # h-v-s2-mb1-s4096-ga2
    "1b128k-full-ho56": ("1b128k", dict(method="full", precision="bf16", stage=3, kernels="none", micro_batch=2,
                                        grad_accum=1, seq_len=4096, grad_ckpt=True), "seed"),  # v-s3-mb2-s4096-ckpt
    "3b-full-ho57": ("3b", dict(method="full", precision="bf16", stage=3, kernels="none", micro_batch=4,
                                grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),  # b3-s3-mb4-ckpt
    "3b-full-ho58": ("3b", dict(method="full", precision="bf16", stage=0, kernels="none", micro_batch=4,
                                grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),  # c-s0-mb4-ga2
    # Held out from the adapters' loss weight (calibration.py's EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT, 2026-12-04,
    # tenth session): new unfused adapter plans, where the loss is most of the margin (the shapes are
    # among the 28 rows the weight was chosen on, the plans are not). Written down by predict.py before
    # they ran.
    "1b128k-lora-ho59": ("1b128k", dict(method="lora", precision="bf16", stage=2, kernels="none", micro_batch=4,
                                        grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    "1b128k-qlora-ho60": ("1b128k", dict(method="qlora", precision="bf16", stage=2, kernels="none", micro_batch=8,
                                         grad_accum=1, seq_len=1024, grad_ckpt=True), "seed"),
    "3b-lora-ho61": ("3b", dict(method="lora", precision="bf16", stage=0, kernels="none", lora_targets=ALL_LINEAR,
                                micro_batch=2, grad_accum=2, seq_len=4096, grad_ckpt=True), "seed"),
    # Held out from the loss weight's extension to the offloaded optimizer (calibration.py's
    # EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT, 2026-12-04, eleventh session): full fine-tunes whose
    # gradients go to the host as backward makes them, on the 128k vocabulary (no such row had run on
    # it), ZeRO-2 at 4,096 tokens and ZeRO-1 in fp16 with one micro-batch a step. Written down by
    # predict.py before they ran.
    "1b128k-full-ho62": ("1b128k", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu",
                                        kernels="none", micro_batch=2, grad_accum=1, seq_len=4096, grad_ckpt=True), "seed"),
    "1b128k-full-ho63": ("1b128k", dict(method="full", precision="fp16", stage=1, offload_optimizer="cpu",
                                        kernels="none", micro_batch=4, grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    # Held out from everything (2026-12-04, twelfth session): the jobs users bring on the cards they have,
    # as `fit` picks them with zerotui's defaults (Liger kernels, expandable segments) under each card's
    # memory. The cap is the card: 48 GiB (an RTX 6000 Ada / A6000), 24 GiB (an RTX 4090), 16 GiB (an
    # RTX 4060 Ti 16 GB / T4), 12 GiB (an RTX 3060 / 4070), 80 GiB (an A100 / H100). Written down by
    # predict.py before they ran.
    "7b-lora-fit48": ("7b", dict(method="lora", precision="bf16", stage=2, micro_batch=4, grad_accum=4,
                                 seq_len=2048, grad_ckpt=True), "fit"),
    "7b-qlora-fit12-s2048": ("7b", dict(method="qlora", precision="bf16", stage=0, lora_targets=ALL_LINEAR,
                                        micro_batch=4, grad_accum=4, seq_len=2048, grad_ckpt=True), "fit"),
    "13b-qlora-fit16": ("13b", dict(method="qlora", precision="bf16", stage=0, lora_targets=ALL_LINEAR,
                                    micro_batch=4, grad_accum=4, seq_len=1024, grad_ckpt=True), "fit"),
    "7b-lora-fit24-s4096": ("7b", dict(method="lora", precision="bf16", stage=2, micro_batch=2, grad_accum=4,
                                       seq_len=4096, grad_ckpt=True), "fit"),
    "3b-full-fit24": ("3b", dict(method="full", precision="bf16", stage=2, micro_batch=4, grad_accum=4,
                                 seq_len=2048, grad_ckpt=True), "fit"),
    "3b-full-fit80": ("3b", dict(method="full", precision="bf16", stage=2, micro_batch=4, grad_accum=4,
                                 seq_len=2048, grad_ckpt=True), "fit"),
    "1b128k-full-fit24": ("1b128k", dict(method="full", precision="bf16", stage=2, micro_batch=2, grad_accum=4,
                                         seq_len=4096, grad_ckpt=True), "fit"),
    "1b128k-lora-fit16-s8192": ("1b128k", dict(method="lora", precision="bf16", stage=2, lora_targets=ALL_LINEAR,
                                               micro_batch=1, grad_accum=8, seq_len=8192, grad_ckpt=True), "fit"),
    # Held out from two rules (2026-12-05, fifteenth session): ZeRO-1 with the optimizer offloaded and
    # accumulation churns no gradient but a tied head's (margin.churning_gradients), and a tied head's
    # gradient is held through backward at stages 0-2 (job.held_head_gradient). The untied twin of ho34,
    # a tied plan without recompute, the tied shape at ZeRO-2 (optimizer offloaded, one micro-batch) and
    # ZeRO-0 (its allocation peak late in backward), and an fp16 1.1B plan with Liger. Written down by
    # predict.py before they ran (estimator-tied-head-predictions-2026-12-05.txt). ho64 came out 9.2% and
    # ho68 4.6% short with the rules, so neither shipped (docs/estimator.md); ho67 has not run.
    "q1.5bu-full-ho64": ("q1.5bu", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu",
                                        kernels="auto", micro_batch=4, grad_accum=4, seq_len=2048, grad_ckpt=True),
                         "seed"),
    "q1.5b-full-ho65": ("q1.5b", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu",
                                      kernels="auto", micro_batch=2, grad_accum=2, seq_len=2048, grad_ckpt=False),
                        "seed"),
    "q1.5b-full-ho66": ("q1.5b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu",
                                      kernels="auto", micro_batch=16, grad_accum=1, seq_len=2048, grad_ckpt=True),
                        "seed"),
    "q1.5b-full-ho67": ("q1.5b", dict(method="full", precision="bf16", stage=0, kernels="auto", micro_batch=32,
                                      grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-ho68": ("1b", dict(method="full", precision="fp16", stage=1, offload_optimizer="cpu", kernels="auto",
                                micro_batch=4, grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
    # The speed job 1b-z2-pin's plan (benchmarks/speed/run.py), whose pinned run reserved 6.65 GiB and allocated
    # 4.32 GiB where the estimate said 4.21 and 3.57 (2026-12-05, nineteenth session): under the allocator's
    # history, to find what the estimate lacks.
    "1b-full-ho69": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="auto",
                                micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True), "seed"),
    # Held out from offload12.py's two moments (2026-12-05, nineteenth session): fit's pick for the 1.1B on a
    # 24 GiB card (ZeRO-2, 16 sequences, one micro-batch a step), the same at ZeRO-1 (whose clones stay for every
    # weight, not a partition's), and ZeRO-2 without fused kernels (its loss beside the held gradients).
    # Written down by predict.py before they ran.
    "1b-full-ho70": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="auto",
                                micro_batch=16, grad_accum=1, seq_len=1024, grad_ckpt=True), "seed"),
    "1b-full-ho71": ("1b", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu", kernels="auto",
                                micro_batch=8, grad_accum=1, seq_len=1024, grad_ckpt=True), "seed"),
    "1b-full-ho72": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="none",
                                micro_batch=4, grad_accum=1, seq_len=1024, grad_ckpt=True), "seed"),
    # The product's headline job, first run on a card (2026-12-05, twentieth session): the seed's 7B full
    # fine-tune (presets/llama7b-24gb-zero3-cpu.yaml: fp16, ZeRO-3, weights and optimizer on the CPU) as `fit`
    # picks it for a 24 GiB card on the machine it runs on. Its model folder must not sit in /dev/shm
    # (ZT_MODELS_DIR=/tmp/zt-models): the plan needs most of the host's RAM. Written down by predict.py first.
    "7b-full-fit24": ("7b", dict(method="full", precision="fp16", stage=3, offload_optimizer="cpu",
                                 offload_params="cpu", **SEED_BATCH), "fit"),
    # What fit picked there, pinned (123.2 of the 123.6 GiB free), was killed by the kernel's OOM killer at the
    # first step with the worker at 119.6 GiB (seed-scenarios-full7b-h100-2026-12-05.json); the same plan
    # unpinned, which the estimate (written down before either ran) put at 116.9 GiB of host RAM.
    "7b-full-fit24-unpinned": ("7b", dict(method="full", precision="fp16", stage=3, offload_optimizer="cpu",
                                          offload_params="none", pin_memory=False, micro_batch=8, grad_accum=2,
                                          seq_len=1024, grad_ckpt=True), "seed"),
    # The same job in bf16, as fit picks it (2026-12-05, twenty-first session): what a user of a bf16 card (an
    # RTX 3090/4090) would run. No loss scale and no overflow check; 0.4 GiB less GPU by the estimate than fp16,
    # whose GPU estimate came out 2.8% low. Written down by predict.py before it ran.
    "7b-full-fit24-bf16": ("7b", dict(method="full", precision="bf16", stage=3, offload_optimizer="cpu",
                                      offload_params="cpu", **SEED_BATCH), "fit"),
    # fp16 ZeRO-3 without offload through zerotui's worker, whose overflow check (core/train/overflow_check.py)
    # then reduces the gradient partition on the GPU, on DeepSpeed's reduce stream: that it trains and its loss
    # scale moves (no worker row of this kind yet). Predicted 2026-12-05 (twentieth session); not run then: the
    # session's device time was spent (estimator-fp16-z3-predictions-2026-12-05.txt).
    "1b-full-fp16-z3": ("1b", dict(method="full", precision="fp16", stage=3, micro_batch=8, grad_accum=1,
                                   seq_len=1024, grad_ckpt=True), "seed"),
    # Held out from the fp16 ZeRO-3 first-step rule (core/estimate/margin.py, gone_with_expandable), set on
    # 1b-full-fp16-z3 (2026-12-05, twenty-first session): fp16 ZeRO-3 plans of another shape and width, whose
    # fp32 gradient copy the old rule counted as a new segment. Written down by predict.py before they ran.
    "3b-full-ho73": ("3b", dict(method="full", precision="fp16", stage=3, kernels="auto", micro_batch=2,
                                grad_accum=1, seq_len=1024, grad_ckpt=True), "seed"),
    "1b-full-ho74": ("1b", dict(method="full", precision="fp16", stage=3, kernels="auto", micro_batch=4,
                                grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    # Held out from two ZeRO-3 rules of 2026-12-06 (twenty-second session; core/estimate/margin.py): full
    # fine-tunes' loss holes at the weight of plans without a gradient store made in backward, and DeepSpeed's
    # fp64 norm of each offloaded gradient partition (stage3.py, _constant_buffered_norm2, 250M elements a
    # chunk) as a block beyond the pool. The 128k vocabulary's 263M-element embedding makes that block the
    # largest it can be. Written down by predict.py, old rules and new, before they ran.
    "1b128k-full-ho75": ("1b128k", dict(method="full", precision="bf16", stage=3, offload_optimizer="cpu",
                                        kernels="none", micro_batch=4, grad_accum=2, seq_len=1024, grad_ckpt=True),
                         "seed"),
    "3b-full-ho76": ("3b", dict(method="full", precision="bf16", stage=3, offload_optimizer="cpu", kernels="none",
                                micro_batch=4, grad_accum=2, seq_len=1024, grad_ckpt=True), "seed"),
    "1b128k-full-ho77": ("1b128k", dict(method="full", precision="bf16", stage=3, kernels="none", micro_batch=4,
                                        grad_accum=2, seq_len=1024, grad_ckpt=True), "seed"),
    # Held out from dropping the gradient share where the optimizer is offloaded (margin.gradient_churn, the
    # same session): ZeRO-1 with accumulation keeps every 16-bit gradient between boundaries, 6.0 GiB on the
    # 3B shape and 2.9 on the 128k 1.1B, so the estimate falls by half of that.
    "3b-full-ho78": ("3b", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu", kernels="none",
                                micro_batch=2, grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
    "1b128k-full-ho79": ("1b128k", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu",
                                        kernels="none", micro_batch=2, grad_accum=4, seq_len=2048, grad_ckpt=False),
                         "seed"),
    # Held out from the first step's excess (margin.first_step_term, 2026-12-06, twenty-third session): with
    # expandable segments the first-step share applies to the smaller of the fp32 copy and what the step's
    # new tensors exceed the room by. 128k plans at ZeRO-1/2 without offload, whose step does not fit the room
    # by less than the copy (ho80, ho83: 1.1 and 1.0 GiB less than the old rule), by most of it (ho81: 0.1 GiB
    # less), and a ZeRO-1 plan (ho82, 0.2 GiB less). Written down by predict.py before they ran (ho80 +3.2%,
    # ho83 +1.8%, ho81 +6.5%, where the old rule gives +6.4%, +4.5%, +6.8%; ho82, run a session later, +3.2%,
    # the old rule +3.9%; H100, 2026-12-06).
    "1b128k-full-ho80": ("1b128k", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=2,
                                        grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    "1b128k-full-ho81": ("1b128k", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=1,
                                        grad_accum=1, seq_len=4096, grad_ckpt=False), "seed"),
    "1b128k-full-ho82": ("1b128k", dict(method="full", precision="bf16", stage=1, kernels="none", micro_batch=1,
                                        grad_accum=2, seq_len=4096, grad_ckpt=False), "seed"),
    "1b128k-full-ho83": ("1b128k", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=4,
                                        grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    # fp16 adapters started at 2^32 at every ZeRO stage (2026-12-06, twenty-fifth session): the GPU had moved
    # the scale on overflow only for LoRA at ZeRO-2 (7b-lora-fp16-overflow); the seed's own stage, ZeRO-3,
    # had never overflowed there. Each must start dynamic, skip the overflowing steps, halve the scale until
    # the gradients fit, and raise no collapse alert. Also new plans for the estimator (predicted first).
    **{f"1b-{m}-fp16-ovf-s{st}{'-cpu' if oo else ''}": (
        "1b", dict(method=m, precision="fp16", stage=st, offload_optimizer="cpu" if oo else "none",
                   fp16_initial_scale_power=32, micro_batch=8, grad_accum=2, seq_len=1024, grad_ckpt=True,
                   max_steps=24, log_interval=2, **(dict(lora_targets=ALL_LINEAR) if m == "qlora" else {})),
        "seed") for m, st, oo in (("lora", 0, False), ("lora", 1, False), ("lora", 2, False), ("lora", 3, False),
                                   ("lora", 3, True), ("qlora", 0, False), ("qlora", 1, False), ("qlora", 2, False),
                                   ("qlora", 3, False))},
    # The cap and the allocator's release (2026-12-06, twenty-sixth session). 3b-full-fit80 held 0.08 GiB beyond
    # allocated where the estimate gave 5.98: its allocator history (memsnap-3b-fit80-2026-12-04.txt) has the
    # pool at 65.85 GiB when the first step asked for its 11.97 GiB fp32 gradient copy, past the 77.72 GiB the
    # cap lets the allocator hold, and the pool then handing back its free pages and growing by the copy
    # alone. ho84 is that plan (fit's pick under 80 GiB) with a cap that does not bind; 1b-full-ho23 (22.60
    # GiB allocated, 26.65 reserved under 40 GiB) goes under 26 GiB, where only its holes are over the line.
    "3b-full-ho84": ("3b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=2, grad_accum=8,
                                seq_len=2048, grad_ckpt=False), "seed"),
    # Held out from what the pool has free at the step (margin.step_free, 2026-12-06, twenty-sixth session):
    # ZeRO-1/2 plans without recompute whose forward/backward peak lies above their step, so the first step's
    # fp32 copy finds part of the pool free. Written down by predict.py before they ran, beside the old rule's.
    "1b128k-full-ho85": ("1b128k", dict(method="full", precision="fp16", stage=1, kernels="none", micro_batch=4,
                                        grad_accum=1, seq_len=1024, grad_ckpt=False), "seed"),
    "1b-full-ho86": ("1b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=3, grad_accum=4,
                                seq_len=2048, grad_ckpt=False), "seed"),
    "1b128k-full-ho87": ("1b128k", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=2,
                                        grad_accum=1, seq_len=2048, grad_ckpt=False), "seed"),
    "q1.5b-full-ho88": ("q1.5b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=3,
                                      grad_accum=4, seq_len=2048, grad_ckpt=False), "seed"),
    "1b-full-ho89": ("1b", dict(method="full", precision="fp16", stage=1, kernels="auto", micro_batch=3, grad_accum=4,
                                seq_len=2048, grad_ckpt=False), "seed"),
    # The sweeps' rows still over the band that zerotui's worker never ran (2026-12-06, twenty-seventh
    # session): w8-s2-mb8-s4096-ckpt (+0.3% in sweep 2, +6.7% in sweep 4 with Adam's state made at start)
    # and n-s3-lora-all-r32-mb4-ckpt (+5.7%, sweep 2 only). Written down by predict.py before they ran.
    "7b-l8-full-ho90": ("7b-l8", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=8,
                                      grad_accum=1, seq_len=4096, grad_ckpt=True), "seed"),  # w8-s2-mb8-s4096-ckpt
    "2b-49k-lora-ho91": ("2b-49k", dict(method="lora", precision="bf16", stage=3, kernels="none", lora_r=32,
                                        lora_targets=ALL_LINEAR, lora_dropout=0.05, micro_batch=4, grad_accum=1,
                                        seq_len=2048, grad_ckpt=True), "seed"),  # n-s3-lora-all-r32-mb4-ckpt
    # Held out from the loss's freed blocks as room for the first step's copy (2026-12-06, twenty-seventh
    # session; ho90's allocator history): ZeRO-2 plans whose loss blocks outweigh their fp32 gradient copy.
    "7b-l8-full-ho92": ("7b-l8", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=4,
                                      grad_accum=1, seq_len=8192, grad_ckpt=True), "seed"),
    "2b-49k-full-ho93": ("2b-49k", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=12,
                                        grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    # NVMe offload (ZeRO-Infinity), first run on a GPU (2026-12-04, thirteenth session): the optimizer
    # alone, then the weights too, in the harness's folder on the machine's disk (--nvme-dir)
    # (they ran with DeepSpeed's sub_group_size and reuse distance, 1e9, zerotui's defaults then; NVMe plans get
    # 1e8 sub-groups since, and with their weights on NVMe a reuse distance of 0)
    "1b-full-nvme": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme", micro_batch=4,
                                grad_accum=1, seq_len=2048, grad_ckpt=True, sub_group_size=10**9), "seed"),
    "1b-full-nvme-both": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                     offload_params="nvme", micro_batch=4, grad_accum=1, seq_len=2048,
                                     grad_ckpt=True, sub_group_size=10**9, stage3_max_reuse_distance=10**9), "seed"),
    # the same with zerotui's NVMe choices (1e8 sub-groups, reuse distance 0): not yet run on a GPU
    "1b-full-nvme-both-rd0": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                         offload_params="nvme", micro_batch=4, grad_accum=1, seq_len=2048,
                                         grad_ckpt=True), "seed"),
    # the same optimizer-on-NVMe plan with zerotui's NVMe sub-group (1e8): host RAM, locked bytes, speed
    "1b-full-nvme-sg": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme", micro_batch=4,
                                   grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    # held out from what 1b-full-nvme-sg's host RAM taught (2026-12-05, seventeenth session): 3e8 sub-groups
    "1b-full-nvme-sg3e8": ("1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                      micro_batch=4, grad_accum=1, seq_len=2048, grad_ckpt=True,
                                      sub_group_size=3 * 10**8), "seed"),
    "tiny-nvme-seed": ("tiny", dict(method="full", precision="fp32", stage=3, offload_optimizer="nvme",
                                    offload_params="nvme", micro_batch=2, grad_accum=2, seq_len=128), "seed"),
    # On the CPU (--dry-run): the swap folder's size with every matrix swapped, against the estimate.
    "0.1b-nvme-cpu": ("0.1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                   micro_batch=2, grad_accum=1, seq_len=128), "seed"),
    "0.1b-nvme-both-cpu": ("0.1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                        offload_params="nvme", micro_batch=2, grad_accum=1, seq_len=128), "seed"),
    # On the CPU, under benchmarks/hostsnap: host RAM against the largest optimizer sub-group (2026-12-05)
    "0.1b-nvme-cpu-sg1e9": ("0.1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                         micro_batch=2, grad_accum=1, seq_len=128, sub_group_size=10**9), "seed"),
    "0.1b-nvme-cpu-sg3e7": ("0.1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                         micro_batch=2, grad_accum=1, seq_len=128, sub_group_size=3 * 10**7), "seed"),
    # Weights on NVMe with every weight swapped (max_in_cpu 0: DeepSpeed otherwise keeps up to 1e9 of them in
    # host RAM, all of this model's), as the 1.1B H200 run had them: DeepSpeed's reuse distance (1e9) then
    # zerotui's (0 with the weights on NVMe) (2026-12-05)
    "0.1b-nvme-both-swapped-rd1e9": ("0.1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                                  offload_params="nvme", micro_batch=2, grad_accum=1, seq_len=128,
                                                  grad_ckpt=True, stage3_max_reuse_distance=10**9,
                                                  ds_overrides={"zero_optimization": {"offload_param": {"max_in_cpu": 0}}}),
                                     "seed"),
    "0.1b-nvme-both-swapped": ("0.1b", dict(method="full", precision="bf16", stage=3, offload_optimizer="nvme",
                                            offload_params="nvme", micro_batch=2, grad_accum=1, seq_len=128,
                                            grad_ckpt=True,
                                            ds_overrides={"zero_optimization": {"offload_param": {"max_in_cpu": 0}}}),
                               "seed"),
    "tiny-lora-seed": ("tiny", dict(method="lora", precision="fp32", stage=2, micro_batch=2, grad_accum=2, seq_len=128), "seed"),
    "tiny-qlora-fit": ("tiny", dict(method="qlora", precision="fp32", stage=2, micro_batch=2, grad_accum=2, seq_len=128), "fit"),
}
#: Dense bf16 matmul peak of an H200 SXM (NVIDIA's data sheet: 989 TFLOP/s without sparsity), and the
#: rate its cuBLAS reaches on large GEMMs here (~790 TFLOP/s, the device notes), both reported.
PEAK_SPEC = 989e12
PEAK_MEASURED = 790e12


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
                        "from benchmarks.seed_scenarios.run import build_model; "
                        "print(json.dumps(build_model(sys.argv[1], Path(sys.argv[2]))))", shape, str(folder)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-500:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


#: Words a row: about 8,300 tokens, so every scenario's micro-batches are as wide as its seq_len (rows
#: are cut to it; 3,000 words, ~7,800 tokens, until the twelfth session's 8,192-token plan). Until the ninth session (2026-12-04) rows were 1,400 words, 3,539-3,763 tokens, so a
#: 4,096-token plan ran narrower micro-batches (the collator pads to the batch's longest row):
#: 1b128k-full-ho56's allocator history has 7,312 tokens in a 2-row micro-batch
#: (benchmarks/results/memsnap-1b128k-ho56-2026-12-04.txt). ``ran_seq_len`` rebuilds those runs' widths.
WORDS = 3200
LEGACY_WORDS = 1400


def row_lengths(path: Path, seq_len: int = 1 << 20) -> tuple[int, ...]:
    """A write_data file's rows in tokens as zerotui's data pipeline makes them for the model folders'
    tokenizer (BOS and EOS included, cut to ``seq_len``), in the order the training set holds them."""
    from zerotui.core.data.prepare import prepare_data
    from zerotui.core.model.tiny import tiny_tokenizer
    from zerotui.core.plan.schema import plan_from_dict

    plan = plan_from_dict({"model": str(path.parent), "data": str(path), "data_format": "text", "seq_len": seq_len,
                           "eval_fraction": 0.0})
    return tuple(int(n) for n in prepare_data(plan, tiny_tokenizer()).train.lengths())


def ran_seq_len(plan: dict[str, Any], data: dict[str, Any]) -> int:
    """The widest micro-batch a scenario's run had (``data``: its result file). Files with
    ``data_longest_tokens`` ran on rows that fill every scenario: the plan's seq_len. Older files ran on
    LEGACY_WORDS-word rows: where the plan's seq_len is longer than the shortest of them, the run's
    micro-batches are rebuilt as its worker drew them (core/data/sampler.py's DataOrder with the plan's
    seed, max_steps x grad_accum of them, one GPU) from the rows as zerotui's data pipeline made them, and
    each is as wide as collate then padded it (the longest row rounded up to 8). Packed plans (none of
    the committed ones) fill the sequence when two rows fit in it."""
    seq = plan["seq_len"]
    if "data_longest_tokens" in data:
        return min(seq, -(-data["data_longest_tokens"] // 8) * 8)
    lengths = _legacy_lengths(seq)
    if seq <= min(lengths) or (plan.get("packing") and 2 * min(lengths) <= seq):
        return seq
    widths = [max(rows) for rows in _drawn(plan, lengths)]
    return min(seq, -(-max(widths) // 8) * 8)


def _drawn(plan: dict[str, Any], lengths: tuple[int, ...]) -> list[list[int]]:
    """The row lengths of every micro-batch a run drew, as its worker drew them (core/data/sampler.py's
    DataOrder with the plan's seed, max_steps x grad_accum of them, one GPU)."""
    from zerotui.core.data.sampler import DataOrder

    order = DataOrder(len(lengths), plan["micro_batch"], 1, 0, plan.get("seed", 0))
    return [[lengths[i] for i in order.next()] for _ in range(plan["max_steps"] * plan["grad_accum"])]


def ran_masked(plan: dict[str, Any], data: dict[str, Any]) -> Optional[bool]:
    """True where a run's attention got a padding mask that today's zerotui would not give it: files
    without ``padding_masked: false`` ran before collate left the Llama family's padding unmasked
    (2026-12-04, twelfth session, core/data/tokenise.py), and their micro-batches were masked where
    they mixed row lengths. The micro-batches are rebuilt as ``ran_seq_len`` rebuilds them, from the
    rows the file's data had (legacy rows, or ``data_words``-word rows); files with neither ran rows
    that filled every plan. None: the estimator's own rule (core/estimate/job.py attention_masked)."""
    if plan.get("packing") or plan["micro_batch"] < 2 or data.get("padding_masked", True) is False:
        return None
    seq = plan["seq_len"]
    if "data_longest_tokens" not in data:
        lengths = _legacy_lengths(seq)
    elif "data_words" in data:
        lengths = _lengths(data["data_words"], data["data_rows"], seq)
    else:
        return None
    return True if any(min(rows) != max(rows) for rows in _drawn(plan, lengths)) else None


def _legacy_lengths(seq_len: int) -> tuple[int, ...]:
    """The rows every result file before ``data_longest_tokens`` ran on (``row_lengths``)."""
    return _lengths(LEGACY_WORDS, 4000, seq_len)


@functools.lru_cache(maxsize=None)
def _lengths(words: int, rows: int, seq_len: int) -> tuple[int, ...]:
    """The token lengths of ``write_data``'s rows (seeded: the same rows every time), cut at ``seq_len``."""
    with tempfile.TemporaryDirectory(prefix="zt-rows-") as tmp:
        return row_lengths(write_data(Path(tmp) / "data.jsonl", rows=rows, words=words), seq_len)


def write_data(path: Path, rows: int = 4000, words: int = WORDS) -> Path:
    import random

    rng = random.Random(0)
    vocab = "alpha beta gamma delta river stone cloud green table light house water paper bread music".split()
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(rows):
            fh.write(json.dumps({"text": " ".join(rng.choice(vocab) for _ in range(words))}) + "\n")
    return path


def scenario_shape(name: str) -> str:
    """A scenario's model shape: its entry's where it has one (shape names such as "7b-l8" hold a hyphen),
    else the name's first part, as results of scenarios since renamed were written."""
    return SCENARIOS[name][0] if name in SCENARIOS else name.split("-")[0]


def plan_for(name: str, model_dir: Path, data: Path, cap: int, steps: int, log_interval: int,
             hardware: Any = None, nvme_dir: Optional[Path] = None) -> Any:
    """The scenario's plan; a "fit" scenario takes `recommend`'s first plan on ``hardware`` (this machine's
    when None). ``nvme_dir``: where a scenario with NVMe offload swaps."""
    from zerotui.core.plan.schema import plan_from_dict

    shape, fields, pick = SCENARIOS[name]
    base = dict(name=name, model=str(model_dir), data=str(data), data_format="text", gpu_mem_cap=cap or None,
                gpus=1, lr=1e-4, warmup_steps=0, lr_schedule="constant", max_steps=steps, log_interval=log_interval,
                save_interval=0, save_minutes=0, save_final=False, eval_fraction=0.0, seed=1)
    if "nvme" in (fields.get("offload_optimizer"), fields.get("offload_params")):
        base["nvme_path"] = str(nvme_dir or data.parent / "nvme")
    plan = plan_from_dict({**base, **fields}, name)  # a scenario's own steps / interval win
    if pick == "fit":
        from zerotui.core.estimate.recommend import recommend
        from zerotui.core.hardware.detect import detect

        recs = recommend(plan, hardware if hardware is not None else detect(probe_disks=False))
        if not recs:
            raise SystemExit(f"{name}: nothing fits under the cap")
        plan = recs[0].plan
    return plan


class FolderPeak:
    """The most bytes a folder held, sampled every ``every`` seconds on a thread while in the ``with``
    block: NVMe offload's swap files (the worker's own telemetry walks them every 30 s)."""

    def __init__(self, path: Optional[Path], every: float = 0.5) -> None:
        import threading

        self.path, self.every, self.peak = path, every, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        from zerotui.core.hardware.disks import allocated_bytes

        while not self._stop.is_set():
            if self.path is not None and self.path.is_dir():
                self.peak = max(self.peak or 0, allocated_bytes(self.path))
            self._stop.wait(self.every)

    def __enter__(self) -> "FolderPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def run_plan(plan: Any, runs: Path, timeout: float) -> tuple[Path, float, int, str, Any]:
    """Train ``plan`` through zerotui; the run folder, start time, exit code, output tail, and NVML's
    peak as this process sampled it (nvml_peak.py; None without NVML)."""
    from benchmarks.seed_scenarios.nvml_peak import NvmlPeak

    plan_file = runs.parent / f"{plan.name}.yaml"
    plan_file.write_text(plan.to_yaml())
    env = dict(os.environ, ZEROTUI_TELEMETRY_S="2", PYTHONUNBUFFERED="1")
    t0 = time.time()
    with NvmlPeak() as watch:
        try:
            r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", str(plan_file), "--foreground",
                                "--force", "--runs-dir", str(runs)], capture_output=True, text=True, env=env,
                               timeout=timeout)
            rc, tail = r.returncode, (r.stdout + r.stderr)[-1500:]
        except subprocess.TimeoutExpired as err:
            rc, tail = 124, str(err)[-500:]
        finally:
            kill_workers(runs)
    folder = max((p for p in runs.iterdir() if p.is_dir() and p.name.endswith(plan.name)), key=lambda p: p.stat().st_mtime)
    return folder, t0, rc, tail, watch.peak


#: nvmlDeviceGetMemoryInfo reads 0.60 GiB used on the idle H200 (nvidia-smi shows 0 MiB; the seed
#: results' gpu_used_at_start, 2026-12-04); more than this at a run's start is another process, whose
#: memory NVML's peak would count as the run's.
OTHERS_ON_GPU = 2**30


def kill_workers(runs: Path, grace_s: float = 10.0) -> list[int]:
    """End every process under ``runs`` that is still alive, after ``grace_s`` seconds for a finishing
    run to exit by itself; the pids killed. zerotui's worker runs in a session of its own so that a run
    outlives its terminal, so neither a timeout here nor ``timeout`` ending this harness ends it. One left
    alone went on training into the next device command (2026-12-04: 3b-full-ho58, 94,001 MiB still in
    use when its re-run started). A pid counts only while its command line names the run's folder (a
    reused pid is someone else's), and its whole session goes: before the worker's first heartbeat the
    status names only the process that launched it. Waits for the GPU to show the memory freed."""
    from zerotui.core.hardware.gpu_release import wait_gpu_release
    from zerotui.core.run.folder import RunPaths, pid_alive, read_status
    from zerotui.core.run.spare import cmdline

    mine = []
    for folder in (p for p in runs.iterdir() if p.is_dir()):
        st = read_status(RunPaths(folder))
        names = {str(folder), str(folder.resolve())}
        mine += [pid for pid in {int(p) for p in (st.get("pids") or [st.get("pid")]) if p}
                 if pid_alive(pid) and any(n in cmdline(pid) for n in names)]
    deadline = time.monotonic() + grace_s
    while any(pid_alive(p) for p in mine) and time.monotonic() < deadline:
        time.sleep(0.2)
    killed = []
    for pid in (p for p in mine if pid_alive(p)):
        try:
            group = os.getpgid(pid)
            if group == os.getpgid(0):  # never this harness's own group
                os.kill(pid, signal.SIGKILL)
            else:
                os.killpg(group, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass  # gone meanwhile
    if killed:
        wait_gpu_release(killed)
    return killed


def gpu_used_bytes() -> Optional[int]:
    """NVML's used memory on GPU 0 now (None without NVML): what other processes hold before a run."""
    from zerotui.core.hardware.nvml import NvmlSession

    nv = NvmlSession()
    try:
        handle, _ = nv.call("nvmlDeviceGetHandleByIndex", 0) if nv.ok else (None, "")
        mem, _ = nv.call("nvmlDeviceGetMemoryInfo", handle) if handle is not None else (None, "")
        return int(mem.used) if mem is not None else None
    finally:
        nv.close()


def measure(folder: Path, t0: float, skip_windows: int = 1, *, fine: Optional[int] = None) -> dict[str, Any]:
    """The run's figures from its events. ``fine``: NVML's peak as this process sampled it every 0.1 s
    (run_plan, nvml_peak.py); the larger of it and the run's own 2 s telemetry counts, and the telemetry's
    is kept beside it."""
    from zerotui.core.events.stream import read_all

    evs = read_all(folder / "events.jsonl")
    steps = [e for e in evs if e["type"] == "step"]
    tele = [e for e in evs if e["type"] == "telemetry"]
    fin = next((e for e in evs if e["type"] == "run_finished"), {})
    alerts = [e for e in evs if e["type"] == "alert"]
    kept = steps[skip_windows:] or steps
    med = lambda k: statistics.median(e[k] for e in kept) if kept and all(isinstance(e.get(k), (int, float)) for e in kept) else None  # noqa: E731
    nvml = max((g.get("mem_used") or 0 for e in tele for g in e.get("gpus") or []), default=None)
    last = steps[-1] if steps else {}
    started = next((e for e in evs if e["type"] == "run_started"), {})
    # the engine's own line when it made Adam's state at start (core/train/optimizer_state.py); None
    # where it made none (CPU Adam, a resume) or ran before it existed
    made = next((e["message"] for e in evs if e["type"] == "log"
                 and str(e.get("message", "")).startswith("optimizer state made before the first step")), None)
    # host memory from the same telemetry: the run's processes (rss) before and from the end's checkpoint
    # save on, and the machine's used RAM (what the OOM killer weighs)
    saving = next((e["t"] for e in reversed(evs) if e["type"] == "phase" and e.get("name") == "saving checkpoint"),
                  None)
    top = lambda key, es: max((e[key] for e in es if isinstance(e.get(key), int)), default=None)  # noqa: E731
    building = op_build_times(evs)
    run_tele = [e for e in tele if not building(e["t"])]
    return {
        "state": fin.get("state"), "reason": fin.get("reason"), "steps": len(steps),
        "tokens_per_s": med("tokens_per_s"), "tflops_per_gpu": med("tflops"), "step_time_s": med("step_time"),
        "loss_first": steps[0]["loss"] if steps else None, "loss_last": last.get("loss"),
        "loss_scale": [e.get("loss_scale") for e in steps], "loss_scale_dynamic": last.get("loss_scale_dynamic"),
        "skipped_total": last.get("skipped_total"),
        "alerts": [{"kind": a.get("kind"), "message": a.get("message")} for a in alerts],
        "peak_allocated": last.get("gpu_mem_allocated_peak"), "peak_reserved": last.get("gpu_mem_reserved_peak"),
        # the allocator's release-and-retry count at each logged step (core/train/loop.py _memory_peaks)
        "alloc_retries": [e.get("gpu_alloc_retries") for e in steps],
        "nvml_used_max": nvml if fine is None else max(fine, nvml or 0), "nvml_used_max_telemetry": nvml,
        "estimate": started.get("estimate"),
        "first_step_s": round(steps[0]["t"] - t0, 1) if steps else None,
        "params_total": started.get("params_total"), "params_trainable": started.get("params_trainable"),
        "optimizer_state_made": made,
        "host_rss_max": top("rss", tele), "host_ram_used_max": top("ram_used", tele),
        "host_ram_total": top("ram_total", tele),
        "host_rss_max_training": top("rss", [e for e in run_tele if saving is None or e["t"] < saving]),
        "host_rss_max_saving": top("rss", [e for e in run_tele if saving is not None and e["t"] >= saving]),
        "host_rss_max_building": top("rss", [e for e in tele if building(e["t"])]),
    }


#: Telemetry's process tree finds new children only every 10 s (core/hardware/telemetry.py), and a
#: compiler it found may be sampled once more after the build's phase ended.
BUILD_TAIL_S = 12.0


def op_build_times(evs: list[dict]) -> Any:
    """Whether a moment of the run falls in a first-use build of a DeepSpeed op (the worker's phase
    "building DeepSpeed's ... op", to the next phase and BUILD_TAIL_S past it). Telemetry sums the RSS of
    the worker's process tree, and there the compilers count: 4.9 GiB on this 2-core machine for
    cpu_adam and async_io (benchmarks/jit_build_rss.py), none of it the training's."""
    phases = [e for e in evs if e["type"] == "phase"]
    spans = []
    for i, e in enumerate(phases):
        if str(e.get("name", "")).startswith("building DeepSpeed's"):
            end = next((f["t"] for f in phases[i + 1:] if f.get("name") != e.get("name")), float("inf"))
            spans.append((e["t"], end + BUILD_TAIL_S))
    return lambda t: any(a <= t <= b for a, b in spans)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", action="append", default=[])
    ap.add_argument("--cap", default="24GiB")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--log-interval", type=int, default=5)
    ap.add_argument("--models-dir", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    from zerotui.core.hardware.disks import allocated_bytes
    from zerotui.core.plan.allocator import effective_conf
    from zerotui.core.sizes import parse_size

    if a.dry_run:
        a.scenario, a.cap, a.steps, a.log_interval = a.scenario or ["tiny-lora-seed", "tiny-qlora-fit"], "0", 6, 2
    # `timeout` ends this harness with SIGTERM: exit through the finally blocks, which kill the workers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cap = parse_size(a.cap) if a.cap not in ("0", "none") else 0
    work = Path(tempfile.mkdtemp(prefix="zt-seed-"))
    # the run folders (checkpoints of up to 16 bytes a weight) go when the harness ends, however it ends:
    # left behind they filled the GPU machine's /tmp for the next command (2026-12-04, 3b-full-ho58)
    try:
        models = a.models_dir or work / "models"
        models.mkdir(parents=True, exist_ok=True)
        # 1,000 rows: more than any scenario draws (24 steps x 2 x 8 at most); the harness tokenises them once
        # for data_longest_tokens, which the GPU machine pays for
        rows, words = (400, 200) if a.dry_run else (1000, WORDS)
        data = write_data(work / "data.jsonl", rows=rows, words=words)
        out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "host": platform.node(), "cap_bytes": cap, "nvml_clean": True,
                               "command": " ".join(sys.argv), "versions": _versions(), "builds": {}, "scenarios": {},
                               # the command's own setting; each row has the one its run had
                               "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
                               # zerotui's worker makes Adam's state at start (core/train/optimizer_state.py);
                               # files without this key were measured when torch made it at the first step
                               "optimizer_states_made": "before the first step",
                               # the widest micro-batch a plan can have is min(seq_len, this rounded up to 8)
                               "data_longest_tokens": max(row_lengths(data)),
                               # how the rows were made (ran_masked rebuilds the micro-batches from them)
                               "data_words": words, "data_rows": rows,
                               # collate leaves the Llama family's padding unmasked (core/data/tokenise.py)
                               "padding_masked": False}
        for name in a.scenario:
            shape = SCENARIOS[name][0]
            folder = models / f"llama-{shape}"
            if shape not in out["builds"]:
                out["builds"][shape] = build_model_apart(shape, folder)
                print(f"model {shape}: {out['builds'][shape]}", flush=True)
            plan = plan_for(name, folder, data, cap, a.steps, a.log_interval)
            runs = work / "runs"
            runs.mkdir(exist_ok=True)
            used_before = gpu_used_bytes()
            import psutil  # what the machine had free for the run's host memory (model folders in /dev/shm count)

            ram_free = int(psutil.virtual_memory().available)
            with FolderPeak(Path(plan.nvme_path) if plan.uses_nvme() else None) as swap:
                run, t0, rc, tail, fine = run_plan(plan, runs, a.timeout)
            # the allocator the run had: the command's setting, else zerotui's choice for the plan
            row = {"plan": plan.to_dict(), "rc": rc, "alloc_conf": effective_conf(os.environ),
                   **measure(run, t0, fine=fine), "gpu_used_at_start": used_before,
                   "ram_available_at_start": ram_free}
            if plan.uses_nvme():  # the swap files' peak, and whether the run's supervisor took them away
                row["nvme_bytes_max"] = swap.peak
                row["nvme_left_after"] = allocated_bytes(Path(plan.nvme_path))
            if used_before is not None and used_before > OTHERS_ON_GPU:
                row["nvml_clean"] = False  # another process held GPU memory: NVML's peak is not the run's
            if rc != 0:
                row["tail"] = tail
            # the run's end-of-run checkpoint (full fine-tunes: 16 bytes a weight) is not measured; left
            # in place it filled the 64 GB disk after one 3B run (seed-scenarios-step-b-2026-12-04.json)
            shutil.rmtree(run / "checkpoints", ignore_errors=True)
            _derive(row, shape, cap)
            out["scenarios"][name] = row
            print(json.dumps({k: row.get(k) for k in ("state", "tokens_per_s", "mfu_spec", "peak_reserved",
                                                      "estimate_gpu_bytes", "measured_gpu_bytes", "error_pct",
                                                      "first_step_s")}), flush=True)
            a.out.write_text(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _derive(row: dict[str, Any], shape: str, cap: int) -> None:
    """MFU by the FLOP count in docs/seed_scenarios.md, and the estimate against the measured peak."""
    from zerotui.core.estimate.cuda_context import context_bytes
    from zerotui.core.plan.schema import plan_from_dict

    est = row.get("estimate") or {}
    row["estimate_gpu_bytes"] = est.get("gpu_bytes")
    if row.get("peak_reserved"):
        # NVML's peak where the run had the GPU alone, else the peak reserved plus the context assumed
        context = context_bytes(plan_from_dict(row["plan"]))
        nvml = row.get("nvml_used_max") if row.get("nvml_clean", True) else None
        row["measured_gpu_bytes"] = nvml or row["peak_reserved"] + context
        if est.get("gpu_bytes"):
            row["error_pct"] = round(100 * (est["gpu_bytes"] - row["measured_gpu_bytes"]) / row["measured_gpu_bytes"], 1)
    if row.get("tflops_per_gpu"):
        row["mfu_spec"] = round(row["tflops_per_gpu"] * 1e12 / PEAK_SPEC, 3)
        row["mfu_measured_peak"] = round(row["tflops_per_gpu"] * 1e12 / PEAK_MEASURED, 3)
    # only a run that measured a peak can be said to have stayed under the cap (an OOM has no peak)
    row["fits_under_cap"] = bool(cap) and bool(row.get("measured_gpu_bytes")) and row["measured_gpu_bytes"] <= cap


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for name in ("torch", "deepspeed", "transformers", "peft", "bitsandbytes"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "-"
    try:
        import torch

        out["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    except Exception:  # noqa: BLE001
        out["gpu"] = "?"
    return out


if __name__ == "__main__":
    sys.exit(main())
