"""Numbers the estimator takes from measurement rather than from DeepSpeed's source.

Each one was read off the H200 sweeps in benchmarks/results/estimator-2026-11-29.json (NVIDIA H200,
torch 2.11 + CUDA 13, DeepSpeed 0.19.8, transformers 5.17); benchmarks/estimator/report.py prints the
rows they come from. They describe the software stack more than the GPU, and are the estimator's
least portable part: docs/estimator.md says which ones to re-measure on another stack.
"""
from __future__ import annotations

GIB = 2**30

#: NVML's used memory minus PyTorch's peak reserved: CUDA context, kernels, cuBLAS workspaces and the
#: NCCL communicator of one process. 1.89-2.28 GiB on the estimator sweeps' rows (their own harness);
#: 2.28 GiB on every run through zerotui's worker (LoRA, QLoRA, 7B and 13B:
#: benchmarks/results/seed-scenarios-c-2026-12-01.json), which is what users run.
CUDA_CONTEXT_BYTES = int(2.28 * GIB)

#: PyTorch's caching allocator reserves more than it hands out: freed blocks of other sizes cannot
#: serve a new large request. Fitted on the rows that ran in a fresh process (reserved − allocated
#: 1.9-9.1 GiB): the margin is the largest of a share of the peak, a share of the loss's fp32
#: transients (12 bytes per logit, blocks of 4 bytes per logit that fit no freed activation block),
#: and a share of what the first optimizer step creates (Adam moments and fp32 gradients, allocated
#: after activations have cut the cache into layer-sized pieces), with a floor. The first-step shares
#: were raised after sweep 2 (0.5 for every stage before): a-s0-mb4-ga4 reserved 7.4 GiB over its
#: allocation and the budget had been 5% short of nvidia-smi there (docs/estimator.md).
FRAGMENTATION_FRACTION = 0.15
FRAGMENTATION_LOGITS_SHARE = 0.55
FRAGMENTATION_FIRST_STEP_SHARE = 0.65
FRAGMENTATION_STAGE0_STEP_SHARE = 0.95
FRAGMENTATION_MIN_BYTES = int(2.0 * GIB)
#: QLoRA dequantises every linear weight into a fresh block for each matmul, forward, recompute and
#: backward, between activation allocations: the cache splits more. Fitted on the 7B QLoRA row of
#: benchmarks/results/seed-scenarios-7b-a-2026-12-01.json (reserved − allocated 4.35 GiB of 14.30 GiB:
#: 0.30; 0.26 keeps it within 3% under), checked on the 13B row of seed-scenarios-b-2026-12-01.json
#: (3.02 of 13.94 GiB: the budget comes out 4% over). docs/seed_scenarios.md has the table.
FRAGMENTATION_QLORA_FRACTION = 0.26
#: With Liger's fused linear cross-entropy the full fp32 logits and their gradient are never allocated;
#: with them go the largest blocks that split the cache. Measured with the kernels on
#: (benchmarks/results/seed-scenarios-d-2026-12-01.json): reserved − allocated 0.55 GiB of 15.96 for the
#: 7B LoRA and 1.73 of 11.96 for the 7B QLoRA, against 1.62 of 17.70 and 4.34 of 14.30 without them (a);
#: the factor 0.3 was fitted on the d rows. Checked on rows it did not see (seed-scenarios-e): the 13B
#: QLoRA with the kernels −0.3%. A first version applied it to every Liger run; on e's ZeRO-3 rows (Liger's
#: norms and SwiGLU, no fused loss) it promised 3-6% too little, so it follows the fused loss only.
FRAGMENTATION_FUSED_CE_FACTOR = 0.3
#: The floor of 2 GiB comes from the one row whose weights stream in from the CPU (ZeRO-3 parameter
#: offload, w8-s3-cpu2-mb4-ckpt: 2.57 GiB reserved over 3.80 allocated). With the weights resident on
#: the GPU the smallest fragmentation measured was 0.44 GiB (7B LoRA seed, ZeRO-3) and 0.55 GiB (7B LoRA
#: with the kernels): 0.75 GiB there.
FRAGMENTATION_MIN_RESIDENT_BYTES = int(0.75 * GIB)

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
