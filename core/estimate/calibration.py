"""Numbers the estimator takes from measurement rather than from DeepSpeed's source.

Each one was read off the H200 sweeps in benchmarks/results/estimator-2026-11-29.json (NVIDIA H200,
torch 2.11 + CUDA 13, DeepSpeed 0.19.8, transformers 5.17); benchmarks/estimator/report.py prints the
rows they come from. They describe the software stack more than the GPU, and are the estimator's
least portable part: docs/estimator.md says which ones to re-measure on another stack.
"""
from __future__ import annotations


GIB = 2**30

#: NVML's used memory minus PyTorch's peak reserved, for one process (core/estimate/cuda_context.py says
#: which plans get which). Measured piece by piece on the H200 (benchmarks/estimator/context.py,
#: benchmarks/results/context-gpu-2026-12-02.json): the CUDA context 1.21 GiB, cuBLAS 0.06, attention
#: kernels 0.02, an NCCL communicator 0.54; a DeepSpeed engine with one communicator 1.90 GiB, with two
#: 2.28. Through zerotui's worker the committed rows read 1.88-1.94 GiB (one) and 2.275-2.32 (two);
#: which plans hold two: cuda_context.py.
CUDA_CONTEXT_BYTES = int(1.94 * GIB)
#: What a second NCCL communicator adds (0.38 GiB measured on the bare engine; rows through the worker read 2.275-2.32 in all).
SECOND_COMMUNICATOR_BYTES = int(2.28 * GIB) - CUDA_CONTEXT_BYTES

#: The caching allocator's margin (core/estimate/margin.py names the sources and how they combine).
#: Fitted by benchmarks/estimator/fit_margin.py on all 48 committed H200 rows run on PyTorch's default
#: allocator with a measured reserved peak (the seed and held-out scenarios, the sweeps' fresh-worker
#: rows, the speed rows: reserved - allocated 0.44-9.10 GiB), by a grid over these five, scoring the total
#: (allocated + margin + context) against NVML, safety first; judged out of sample by
#: benchmarks/estimator/crossval_margin.py (each result file predicted by a fit on the others:
#: benchmarks/results/estimator-crossval-2026-12-03b.txt). Refitted twice on 2026-12-03: when ZeRO
#: stages 1-2 got a second communicator, then when the communicators were traced (cuda_context.py): the
#: sweeps' harness never saves a checkpoint and holds one at stages 0-2, so those rows lost 0.34 GiB of
#: context that had been covering their margin (w8-s1-cpu-mb2 went to -4.8%, a-s2-cpu-mb8-ga2-ckpt to
#: -3.8%), and the fit raised the base from 0.5 GiB. The gradient share went 0.25 -> 1.0 the same day,
#: when stage 0 lost its gradient moment (gpu.py): the 1.1B ZeRO-0 Liger plan's allocation became exact
#: (36.44 -> 34.76 GiB, measured 34.77), which left its 8.1 GiB of default-allocator holes to the margin
#: (-5.9% with 0.25; -2.5% now). Per-weight gradients made in backward between activation blocks are
#: this allocator's source of holes that the gradient term stands for.
#: All five refitted (2026-12-03, sixth session) once DeepSpeed's fp64 gradient norm with the optimizer
#: offloaded was counted (margin.offload_norm_block): it had been hiding in the base and the gradient share.
#: Before: 0.8 GiB / 0.45 / 0.1 / 1.0 / 1.0.
FRAGMENTATION_BASE_BYTES = int(0.3 * GIB)
FRAGMENTATION_LOSS_SHARE = 0.4
FRAGMENTATION_RECOMPUTE_SHARE = 0.25
FRAGMENTATION_GATHER_SHARE = 1.0
FRAGMENTATION_GRADIENT_SHARE = 1.25
#: The default allocator keeps the whole first-step segment (margin.first_step_bytes): nothing serves a
#: block that large later. Not fitted (fit_margin.py's grid for it is this one value).
FRAGMENTATION_FIRST_STEP_SHARE = 1.0
#: The same five with expandable segments (core/plan/allocator.py: zerotui's setting for every plan since
#: 2026-12-02), fitted the same way on the 86 rows measured with them: 29 through zerotui's worker
#: (seed-scenarios-expandable-*, speed-alloc-*, ho6-alloc-expandable) and the 57 sweep rows of
#: benchmarks/estimator/data/sweep*-expandable-raw.jsonl (reserved - allocated 0.07-10.6 GiB). The first 13 gave a 0.1 GiB
#: base and loss 0.45; 10 rows of 2026-12-03 (ZeRO-1, weights offloaded, bf16 ZeRO-2, the seed plans,
#: 13B), predicted with those before they ran (none more than 3% short, two 5.8% and 6.9% over), and
#: three more predicted before they ran with the refit (none more than 3% short; +13.0% on fp16 ZeRO-1, +10.8% on
#: ZeRO-3 at 4k tokens) moved them to these, with stage 1's first-step segment made smaller (margin.py).
#: No recompute share (0.05 since the tenth session's refit, below). The base went from 0.3 to 0.4 GiB when sweep 1's last seven rows ran
#: (2026-12-03, predicted first): w8-s1-cpu-mb2 (ZeRO-1, optimizer on the CPU) came out 3.2% short, 1.34
#: GiB beyond allocated where the margin gave 0.81. The gradient share went 0 -> 0.25 with the first-step
#: rule (margin.first_step_term, 2026-12-03): without the copy on the rows whose step fits, stages 1-2
#: showed 1-2 GiB more forward/backward holes than the loss term gives (a-s2-mb4-ga4: 2.67 GiB held,
#: 1.43 from base and loss). Then sweep 3 (2026-12-03, held out for that rule, predicted first) had
#: h-a-s1-mb2-s4096-ga2 3.1% short (3.12 GiB beyond allocated, 1.94 given): refitted to a 0.6 GiB base,
#: loss 0.3, gather 0.75 (benchmarks/results/estimator-crossval-2026-12-03d.txt). The base went 0.6 -> 0.7
#: GiB (2026-12-03, sixth session) when the plans held out from the first-step share ran (predicted
#: first): 1b-full-ho24 (bf16 ZeRO-1, 2 x 4 x 2,048, no recompute, Liger) came out 3.1% short, its
#: allocation 0.98 GiB above the estimate (its holes as predicted; the allocation miss is not found).
#: Refitted with the first-step share (below) once DeepSpeed's fp64 gradient norm with the optimizer
#: offloaded was counted (margin.offload_norm_block, 2026-12-03, sixth session): the held-out Qwen2 full
#: fine-tune, 5.3% short, and its untied twin, out of memory under its cap, were that norm's 1.74 GiB
#: block; with it counted nothing holds the base up. Before: 0.7 GiB / 0.3 / 0 / 0.75 / 0.25, share 0.6.
#: Refitted again (2026-12-04, eighth session) once the optimizer step's own moment was counted
#: (margin.step_moment_term): the rows whose step is the peak no longer hold the gradient share and the
#: base up. Before: 0.1 GiB / 0.35 / 0 / 1.0 / 0.75, first-step share 0.4.
#: Refitted once more (2026-12-04, ninth session) when the seed rows were estimated for the micro-batch
#: width that ran (benchmarks/seed_scenarios/data.py's ran_seq_len: 4,096-token plans ran rows of about
#: 3,650 tokens, their micro-batches at most 3,720 wide): 7b-lora-ho6 (ZeRO-3, one row a micro-batch)
#: then came out 3.0% short, and the base came back. Before: 0 / 0.35 / 0 / 1.0 / 0.5, first-step share 0.55.
#: Refitted (2026-12-04, tenth session) on 165 rows, with nine more worker runs (six plans at their true
#: widths, three adapter plans held out from EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT below) and that weight: the
#: base went 0.2 -> 0.1 GiB and recompute 0 -> 0.05. Before: 0.2 GiB / 0.35 / 0 / 1.0 / 0.5, share 0.5.
#: Refitted (2026-12-06, twenty-second session) on 197 rows with three rules of that session
#: (margin.gradient_churn: no gradient share with the optimizer offloaded; ZeRO-3 bf16 full fine-tunes'
#: loss at EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT; the offloaded ZeRO-3 partition's fp64 norm block):
#: with the gradient share now carried by ZeRO-0-2 rows without offload alone, it went 0.5 -> 0.75, the
#: base 0.1 -> 0 GiB, recompute 0.05 -> 0.1, the first-step share 0.5 -> 0.4.
#: Before: 0.1 GiB / 0.35 / 0.05 / 1.0 / 0.5, share 0.5.
#: Refitted (2026-12-07, thirty-first session) on 244 rows once ZeRO-3 adapters' loss holes became their
#: freed 16-bit logits (loss_holes.freed_logits): 7b-lora-ho6 came out 3.1% short with the shares above, and
#: the base came back at 0.1 GiB with recompute 0.1 -> 0.05 (no row short, six over +5% where there were
#: seven). Before: 0 / 0.35 / 0.1 / 1.0 / 0.75, share 0.5.
EXPANDABLE_BASE_BYTES = int(0.1 * GIB)
EXPANDABLE_LOSS_SHARE = 0.35
EXPANDABLE_RECOMPUTE_SHARE = 0.05
EXPANDABLE_GATHER_SHARE = 1.0
EXPANDABLE_GRADIENT_SHARE = 0.75
#: With expandable segments the first optimizer step adds no segment when what it creates (Adam's moments,
#: the fp32 gradient copy) is at most this share of what step 0's forward and backward freed
#: (margin.first_step_term). Set on the per-phase figures of sweeps 1 and 2 (2026-12-03, every row in a
#: process of its own) before sweep 3 ran to test it: the rule said which steps grow the segment on all
#: ten of sweep 3's held-out rows and re-runs. Today, on the 26 expandable rows with phase figures and a
#: first-step segment, the 15 steps that did not grow it are at 0.20-0.85 of the room and the 11 that did
#: at 0.92-3.79 (c-s2-mb4-ga2 at 0.92 is the nearest); the held-out 1b-full-ho21 fit at 0.90, as called.
EXPANDABLE_FIRST_STEP_ROOM_SHARE = 0.9
#: With expandable segments, the share of the first step's segment that is still a hole at the peak,
#: where the step does not fit (above). The copy is freed after the step and the segment keeps its pages:
#: later steps' activations are served from it. Sweep 4 (Adam's state made at start, 2026-12-03) showed
#: it: where the first step grew the pool, later steps' peaks rose less than the pool had. On the 19
#: expandable rows with a segment the rule keeps, the whole copy left them +3.3% … +15.4% (a-s2-mb1-s8192-
#: ckpt: 1.99 GiB held beyond allocated, 6.09 given). Fitted with the five above on every expandable row
#: (benchmarks/estimator/fit_margin.py, 2026-12-03, sixth session), the others unchanged by it; out of
#: sample (crossval_margin.py) 82 of 118 rows within [-3%, +5%] where the whole copy had 68, the worst
#: over +10.7% where it was +16.7%, the same six rows below -3% but one: w8-s2-mb8-s4096-ckpt (its
#: sweep-2 run held 10.57 GiB beyond allocated, its sweep-4 run 7.47) -5.0% in place of w8-s1-cpu-mb2.
#: Refitted to 0.4 with the other constants once DeepSpeed's fp64 gradient norm was counted (same session),
#: to 0.55 once the optimizer step's own moment was (2026-12-04), and to 0.5 with the base's return (the
#: same day, ninth session); 0.4 in the twenty-second session's refit (2026-12-06), and 0.5 again once it
#: applied to the smaller of the copy and what the step's new tensors exceed the room by
#: (margin.first_step_term, twenty-third session: 202 rows, 7 outside the band where 0.4 on the whole copy
#: left 10).
EXPANDABLE_FIRST_STEP_SHARE = 0.5
#: With expandable segments, the share of the loss's bytes that counts toward its holes where backward
#: makes no large gradient store on the GPU (loss_holes.loss_hole_weighted): adapters (LoRA, QLoRA) at ZeRO
#: stages 0-2, whose gradients are small, and full fine-tunes at ZeRO-1/2 with the optimizer offloaded
#: where DeepSpeed copies each gradient to the host as backward reduces it and frees it (stage_1_and_2.py,
#: copy_grads_in_partition: no grads_in_partition buffer with cpu_offload; job.offload_keeps_gradients
#: says where ZeRO-1 keeps them instead). The loss share above applies
#: to this share of them.
#: Chosen on adapters. On the 28 adapter rows of 2026-12-04 (tenth session: LoRA and QLoRA on the 1.1B,
#: 7B, 13B, Qwen2, Llama-3.2-1B and 3B shapes, ZeRO-0 and 2, with and without recompute, the sweeps'
#: harness and zerotui's worker) the loss share fitted on all rows, 0.35, left six 6.8-10.6% over
#: (1b128k-lora-ho52 +10.0%, the pool 2.33 GiB beyond allocated where the margin gave 4.35); where the
#: loss is most of the margin, adapters' pools held 0.16-0.28 of its bytes, full fine-tunes' 0-0.67.
#: Weights 0.7 and 0.6 put all 28 within [-3%, +5%], 0.5 two below; 0.7 kept the lowest at -2.1% (0.6:
#: -2.9%), and was the weight chosen each time a result file was held out. Three adapter plans then ran
#: held out from it, predicted first (ho59-ho61: new plans on the 1b128k and 3B shapes, LoRA and QLoRA at
#: ZeRO-2, LoRA at ZeRO-0): +2.8%, +5.1%, +2.6% (with the weight 1: +6.8%, +12.1%, +7.7%); after the
#: refit they joined (base 0.1 GiB, recompute 0.05, driven by them) +2.5% ... +4.9%.
#: Extended to the offloaded optimizer (2026-12-04, eleventh session) with the weight as chosen on
#: adapters: ZeRO-2's ten full fine-tune rows (1.1B and Qwen2 shapes, bf16 and fp16, the sweeps' harness
#: and the worker) were five over, up to +10.2% (a-s2-cpu-mb16-ckpt), and all came within, -2.2% ...
#: +4.5%; ZeRO-1's two that stream their gradients (one micro-batch a step) stay within (+2.2% -> +1.2%,
#: +4.1% -> +0.6%); the refit did not move the other shares. ZeRO-1 rows that accumulate keep the weight 1
#: (ho17, ho18, ho34, ho35: over by their gradient term, not the loss's; docs/estimator.md). Two plans held
#: out from the extension, predicted first (ho62 bf16 ZeRO-2 and ho63 fp16 ZeRO-1 on the 128k vocabulary,
#: the optimizer on the CPU), came out -0.4% and -0.4% (+5.0% with the weight 1).
#: (benchmarks/estimator/crossval_loss_weight.py, benchmarks/results/estimator-loss-weight-2026-12-04.txt,
#: docs/estimator.md). Why a gradient store makes the loss's holes larger was not traced in an allocator
#: history. ZeRO-3 full fine-tunes in fp16 and the default allocator keep the weight 1; ZeRO-3 adapters count
#: their freed 16-bit logits instead (loss_holes.freed_logits).
EXPANDABLE_NO_GRADIENT_STORE_LOSS_WEIGHT = 0.7
#: ZeRO-3 beyond this sequence length keeps at least this share of the allocation as margin. Set from
#: one measured row (seed-scenarios-ho-c: 7B LoRA, fp16, ZeRO-3, one row a micro-batch planned at 4,096
#: tokens, which ran rows of about 3,650 (micro-batches at most 3,720 wide: run.py's ran_seq_len):
#: reserved - allocated = 0.26 of allocated; rows at 1,024 and 2,048 tokens stayed under 0.2); not
#: checked on another row.
#: Applies only without expandable segments, i.e. where the user chose PyTorch's default allocator
#: (core/plan/allocator.py gives every run expandable segments).
ZERO3_LONG_SEQUENCE_TOKENS = 2048
#: fp16 with the optimizer offloaded at ZeRO stage 1-2 holds this share of the trainable 16-bit gradients on top of the sum.
#: Set from one held-out row (seed-scenarios-context-ho-2026-12-02: 1.1B full, fp16, ZeRO-2, optimizer on
#: the CPU, 8 x 1,024: 1.46 GiB beyond the sum, 0.71 of its gradients); not checked on another.
FP16_OFFLOAD_GRADIENT_SHARE = 0.75
ZERO3_LONG_SEQUENCE_MARGIN_SHARE = 0.25

#: Worker RSS before the model exists: Python, torch, CUDA, DeepSpeed, transformers imported and the
#: process group up (0.92 GiB); after deepspeed.initialize (1.44 GiB: NCCL, JIT op libraries).
HOST_BASE_BYTES = int(1.03 * GIB)
HOST_BASE_AFTER_INIT_BYTES = int(1.44 * GIB)

#: DeepSpeedCPUAdam's own host memory on top of the states it holds (thread pools, its library),
#: measured as the remainder on the four CPU-offload rows (0.54-0.76 GiB).
CPU_ADAM_EXTRA_BYTES = int(0.6 * GIB)

#: GPU memory of an optimizer-offload engine beyond weights and the gradient staging buffer
#: (gradient-norm and bucket bookkeeping): 0.06 GiB on both CPU-offload rows.
OFFLOAD_GPU_EXTRA_BYTES = int(0.0625 * GIB)

#: The first decoder-layer steps take longer on a fresh process; timings use steps after the first.
