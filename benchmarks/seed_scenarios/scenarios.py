"""The seed scenarios: name -> the shape it trains, its plan's fields, and whether it runs as the seed
guide writes it or as ``zerotui fit`` picks it for the capped card; ``plan_for`` makes the plan."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

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
    # Held out from the previous micro-batch's gradient partition at ZeRO-2 (2026-12-06, twenty-ninth
    # session; 1b-full-ho13's allocator history): two micro-batches a step, no recompute, loss blocks
    # smaller than the partition, so the backward's first bucket, not the loss, sets the peak.
    "7b-l8-full-ho94": ("7b-l8", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=2,
                                      grad_accum=2, seq_len=4096, grad_ckpt=False), "seed"),
    "2b-49k-full-ho95": ("2b-49k", dict(method="full", precision="bf16", stage=2, kernels="none", micro_batch=2,
                                        grad_accum=2, seq_len=2048, grad_ckpt=False), "seed"),
    # Held out from a loss weight for bf16 ZeRO-3 adapters, as bf16 ZeRO-3 full fine-tunes have (2026-12-07,
    # thirtieth session): new bf16 ZeRO-3 adapter plans on the 128k vocabulary, where the loss is most of
    # the margin. ho97 came out 3.7% short with the weight, so it was not adopted (docs/estimator-log.md).
    "1b128k-lora-s3-ho96": ("1b128k", dict(method="lora", precision="bf16", stage=3, kernels="none", micro_batch=4,
                                           grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "3b-qlora-s3-ho97": ("3b", dict(method="qlora", precision="bf16", stage=3, kernels="none",
                                    lora_targets=ALL_LINEAR, micro_batch=2, grad_accum=2, seq_len=2048,
                                    grad_ckpt=True), "seed"),
    # Held out from ZeRO-3 adapters' freed 16-bit logits (loss_holes.freed_logits, 2026-12-07, thirty-first
    # session): four micro-batches a step (the rule counts two holes, not four), a QLoRA plan with one
    # (one hole, where the fp32 loss share gave twice as much), and fp16 with one (no such row before).
    "1b128k-lora-s3-ga4-ho98": ("1b128k", dict(method="lora", precision="bf16", stage=3, kernels="none",
                                               micro_batch=2, grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
    "3b-qlora-s3-mb4-ho99": ("3b", dict(method="qlora", precision="bf16", stage=3, kernels="none",
                                        lora_targets=ALL_LINEAR, micro_batch=4, grad_accum=1, seq_len=2048,
                                        grad_ckpt=True), "seed"),
    "1b128k-lora-fp16-s3-ho100": ("1b128k", dict(method="lora", precision="fp16", stage=3, kernels="none",
                                                 micro_batch=4, grad_accum=1, seq_len=2048, grad_ckpt=True),
                                  "seed"),
    # ho98 (four micro-batches a step, bf16 LoRA) held one hole, not the rule's two, where every 16-bit
    # adapter row with two holes was QLoRA or fp16 (2026-12-07, thirty-second session). Held out from the
    # guess that bf16 LoRA holds one at any accumulation: two micro-batches a step, the 128k vocabulary.
    "1b128k-lora-s3-ga2-ho101": ("1b128k", dict(method="lora", precision="bf16", stage=3, kernels="none",
                                                micro_batch=2, grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    # The split (bf16 LoRA one freed-logits hole, QLoRA and fp16 up to two) rests on one shape, the 1.1B on
    # the 128k vocabulary. Held out from it on another (2026-12-07, thirty-third session): the Qwen2 1.5B
    # shape, 152k vocabulary and tied embeddings, two micro-batches a step, LoRA and QLoRA side by side.
    "q1.5b-lora-s3-ga2-ho102": ("q1.5b", dict(method="lora", precision="bf16", stage=3, kernels="none",
                                              micro_batch=2, grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    "q1.5b-qlora-s3-ga2-ho103": ("q1.5b", dict(method="qlora", precision="bf16", stage=3, kernels="none",
                                               micro_batch=2, grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    # 3b-full-fit80/ho84 measured their cap, not their pool (the allocator released at the first step), and no
    # H200 came for the uncapped run. Their plan with one row a micro-batch (2026-12-07, thirty-third session):
    # the same step (allocation and the margin's step hole do not depend on the micro-batch), less room
    # freed by backward, so a pool that should stay under the H100's 78 GiB cap: the step hole at 3B, uncapped.
    "3b-full-mb1-ho104": ("3b", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=1,
                                     grad_accum=16, seq_len=2048, grad_ckpt=False), "seed"),
    # ho104's history showed the 3B step's fp32 copy growing the pool by its whole size, on top of forward's
    # overflow in fit80. A plan whose forward outgrows the room initialisation leaves, under a cap that does
    # not bind (the same session): does its copy find backward's free room (margin.step_free), or grow the pool?
    "2b-49k-full-ho105": ("2b-49k", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=2,
                                         grad_accum=8, seq_len=2048, grad_ckpt=False), "seed"),
    # Held out from the step-copy guard (core/estimate/step_copy.py, set from ho104/ho105/fit80 the day
    # before): its boundary, forward's overflow past initialisation's pool against the fp32 copy. ho106 just
    # over it (1.18 times the copy; the guard off), ho107 and ho108 under it (0.73 and 0.64; the guard on).
    # Predictions: estimator-step-copy-holdout-predictions-2026-12-07.txt, written before they ran.
    "2b-49k-full-ho106": ("2b-49k", dict(method="full", precision="bf16", stage=1, kernels="none", micro_batch=2,
                                         grad_accum=4, seq_len=2048, grad_ckpt=False), "seed"),
    "7b-l8-full-ho107": ("7b-l8", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=4,
                                       grad_accum=4, seq_len=2048, grad_ckpt=False), "seed"),
    "1b128k-full-ho108": ("1b128k", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=2,
                                         grad_accum=4, seq_len=2048, grad_ckpt=False), "seed"),
    # ho107 and ho108 (4 micro-batches a step) read as the margin's rule, ho105 (8) as the guard: the same
    # plans with the other accumulation, to tell the accumulation from the shape (the same session).
    "2b-49k-full-ho109": ("2b-49k", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=2,
                                         grad_accum=4, seq_len=2048, grad_ckpt=False), "seed"),
    "1b128k-full-ho110": ("1b128k", dict(method="full", precision="bf16", stage=1, kernels="auto", micro_batch=2,
                                         grad_accum=8, seq_len=2048, grad_ckpt=False), "seed"),
    # The optimizer on the CPU with several micro-batches a step (2026-12-07, thirty-fourth session): DeepSpeed's
    # ZeRO-1/2 offload moves each micro-batch's 16-bit gradients to the host and, after the first, back to add
    # the next (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu); the speed model had none of it, and the
    # sweeps' one such row (a-s2-cpu-mb8-ga2-ckpt) ran 10% slower than it said. The same 16 rows a step, three
    # ways, and a second shape (predictions: speed-offload-accumulation-predictions-2026-12-07.txt).
    "1b-full-oga1": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="none",
                                micro_batch=16, grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-oga2": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="none",
                                micro_batch=8, grad_accum=2, seq_len=2048, grad_ckpt=True), "seed"),
    "1b-full-oga4": ("1b", dict(method="full", precision="bf16", stage=2, offload_optimizer="cpu", kernels="none",
                                micro_batch=4, grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
    "7b-l8-full-oga1": ("7b-l8", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu",
                                      kernels="none", micro_batch=4, grad_accum=1, seq_len=2048, grad_ckpt=True), "seed"),
    "7b-l8-full-oga4": ("7b-l8", dict(method="full", precision="bf16", stage=1, offload_optimizer="cpu",
                                      kernels="none", micro_batch=1, grad_accum=4, seq_len=2048, grad_ckpt=True), "seed"),
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
