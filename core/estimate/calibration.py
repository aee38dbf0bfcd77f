"""Numbers the estimator takes from measurement rather than from DeepSpeed's source.

Each one was read off the H200 sweeps in benchmarks/results/estimator-2026-11-29.json (NVIDIA H200,
torch 2.11 + CUDA 13, DeepSpeed 0.19.8, transformers 5.17); benchmarks/estimator/report.py prints the
rows they come from. They describe the software stack more than the GPU, and are the estimator's
least portable part: docs/estimator.md says which ones to re-measure on another stack.
"""
from __future__ import annotations

from zerotui.core.plan import allocator

GIB = 2**30

#: NVML's used memory minus PyTorch's peak reserved: CUDA context, kernels, cuBLAS workspaces and the
#: NCCL communicator of one process. 1.89-2.28 GiB on the estimator sweeps' rows (their own harness);
#: 2.28 GiB on every run through zerotui's worker (LoRA, QLoRA, 7B and 13B:
#: benchmarks/results/seed-scenarios-c-2026-12-01.json), which is what users run.
CUDA_CONTEXT_BYTES = int(2.28 * GIB)

#: The caching allocator's margin (core/estimate/margin.py names the sources and how they combine).
#: Fitted by benchmarks/estimator/fit_margin.py on all 41 committed H200 rows with a measured reserved
#: peak (the seed and held-out scenarios, the sweeps' fresh-worker rows, the speed rows: reserved -
#: allocated 0.44-9.10 GiB), by a grid over these five, scoring the total (allocated + margin + context)
#: against NVML, safety first; judged out of sample by benchmarks/estimator/crossval_margin.py (each
#: result file predicted by a fit on the others: benchmarks/results/estimator-crossval-2026-12-02.txt).
FRAGMENTATION_BASE_BYTES = int(0.6 * GIB)
FRAGMENTATION_LOSS_SHARE = 0.35
FRAGMENTATION_RECOMPUTE_SHARE = 0.25
FRAGMENTATION_GATHER_SHARE = 0.75
FRAGMENTATION_GRADIENT_SHARE = 0.75
#: ZeRO-3 beyond this sequence length keeps at least this share of the allocation as margin. Set from
#: one measured row (seed-scenarios-ho-c: 7B LoRA, fp16, ZeRO-3, 1 × 4,096 tokens: reserved - allocated
#: = 0.26 of allocated; rows at 1,024 and 2,048 tokens stayed under 0.2); not checked on another row.
#: Applies only without expandable segments (core/plan/allocator.py gives these plans expandable segments).
ZERO3_LONG_SEQUENCE_TOKENS = allocator.LONG_SEQUENCE_TOKENS
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
