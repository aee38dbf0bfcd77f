"""ZeRO-1/2 with the optimizer offloaded: two moments DeepSpeed 0.19.8 adds beyond the steady model states.

Both were found in one allocator history (1b-full-ho69: 1.1B, bf16, ZeRO-2, Adam on the CPU, Liger, recompute,
8 x 1,024 tokens, 2 micro-batches a step; benchmarks/results/memsnap-1b-ho69-2026-12-05.txt). It allocated
4.32 GiB and reserved 6.65 GiB where the estimate had 3.57 and 4.21, 26.6% short with NVML's figure.

**Gradients held until backward ends** (``held_gradients``). With the optimizer offloaded DeepSpeed protects
each gradient that does not fit the reduce bucket by cloning it (stage_1_and_2.py,
``reduce_independent_p_g_buckets_and_remove_grads``, "offload gradient protections"), copies it to the host
and leaves the clone on the weight (``copy_grads_in_partition`` returns without clearing it); the epilogue
of each backward frees them all (``zero_grad``). So late in every backward the GPU holds the 16-bit gradient
of every weight larger than the reduce bucket: in the trace, 63 MLP matrices and the head's, 1.48 GiB, beside
one recomputed layer. At stage 2 a rank clears the clones of weights outside its partition; stage 1 does not.

**Initialisation's pool** (``init_reserved``). The engine flattens the trainable 16-bit weights into one
buffer, on the GPU when the device's free memory holds it (``flatten_on_accelerator``), freeing the originals
after; then it clones its partition on the GPU before moving the copy to the host as the fp32 master
(``.detach().clone().to(device=cpu)``). The clone cannot use the originals' freed blocks, so the pool grows
to three copies: 6.16 GiB reserved with 2.05 allocated in the trace, before the first step. Training then
allocates inside that pool, and the gradient norm's fp64 block grows it once more (``init_floor``).
Without the offload the master and Adam's states stay on the GPU and the step outgrows this moment, so
only offload plans get it.
"""
from __future__ import annotations

from zerotui.core.estimate.job import Job, offload_keeps_gradients, trainable_shapes


#: The margin term (gpu.peak) and the budget's line for initialisation's pool beyond the training peak.
POOL = "initialisation's pool (offload)"
POOL_LABEL = "initialisation's pool beyond the peak (offload)"


def applies(job: Job) -> bool:
    return job.on_gpu and job.stage in (1, 2) and job.oo != "none"


def held_gradients(job: Job) -> float:
    """Bytes of 16-bit gradients one rank holds late in backward (the module docstring). 0 where every
    gradient stays anyway (``offload_keeps_gradients``: counted as the plan's gradients) or where gradients
    do not go through the contiguous bucket (not traced)."""
    if not applies(job) or offload_keeps_gradients(job) or not job.plan.contiguous_gradients:
        return 0.0
    bucket = job.buckets["reduce_bucket_size"]
    big = sum(n * c for n, c in trainable_shapes(job) if n > bucket)
    return job.p * big / (job.N if job.stage == 2 else 1)


def flattens_on_gpu(job: Job, context: float) -> bool:
    """Whether the device's free memory after loading the model holds the flat buffer (DeepSpeed asks the
    device, not the run's allocator cap). Unknown capacity counts as yes, the larger case."""
    total = job.hw.gpu_total_bytes
    return not total or total - context - job.weight_bytes >= job.p * job.psit


def init_reserved(job: Job, context: float) -> float:
    """The pool after initialisation: every weight, the flat buffer's originals where it was made on the GPU,
    and the partition's clone (the module docstring); 0 where this moment does not apply."""
    if not applies(job):
        return 0.0
    flat = job.p * job.psit
    return job.weight_bytes + (flat if flattens_on_gpu(job, context) else 0.0) + flat / job.N


def init_floor(job: Job, context: float, allocated: float, margin: float, norm_block: float) -> float:
    """What raises ``margin`` so that allocated + margin reaches initialisation's pool plus the fp64 block of
    the gradient norm (margin.offload_norm_block), else 0. Training's other blocks go into the pool's free
    copies; the norm's block, asked for whole at the accumulation boundary, grew the pool past them. Four
    rows whose allocation stayed under the pool reserved it plus that block, to 0.03 GiB: 1b-full-ho69 and
    ho68 (1.1B, 6.16 + 0.49 GiB), q1.5b-full-ho34 and q1.5bu-full-ho64 (Qwen2-1.5B, its 151,936-word
    embedding's 1.74 GiB block)."""
    return max(0.0, init_reserved(job, context) + norm_block - allocated - margin)
