"""Host RAM of one rank (then the node) and NVMe bytes: what offload puts there, and start-up's peak.

Host RAM peaks while the model is loaded (every rank builds it on the host unless stage 3 builds it
partitioned with zero.Init), after ``deepspeed.initialize``, when the offloaded states and their pinned
buffers exist, or while a checkpoint is written (``save_copy``). PyTorch's pinned allocator rounds each
buffer up to a power of two (``job.pinned``), which is counted.
"""
from __future__ import annotations

from zerotui.core.deepspeed.config import DS_PARAM_MAX_IN_CPU, param_buffer_size
from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.job import Job, largest_sub_group, per_weight_pinned, pinned, sub_groups


def offloaded(job: Job) -> dict[str, float]:
    """Host bytes of one rank that optimizer / parameter offload adds."""
    plan, p, psi, psit, N = job.plan, job.p, job.psi, job.psit, job.N
    pin, b, oo, op = plan.pin_memory, job.buckets, job.oo, job.op
    held = "pinned" if pin else "pageable"  # the label says which (the sizes follow ``pin`` either way)
    off: dict[str, float] = {}
    if oo == "cpu" and job.stage in (1, 2):
        off[f"fp32 master ({held})"] = pinned(4 * psit / N, pin)
        off[f"16-bit copy ({held})"] = pinned(p * psit / N, pin)
        off[f"fp32 gradients ({held})"] = pinned(4 * psit / N, pin)
        off["optimizer states"] = 8 * psit / N
        off["CPU Adam"] = cal.CPU_ADAM_EXTRA_BYTES
        if plan.grad_accum > 1:
            # Between accumulation boundaries each trainable weight's gradient is summed on the host in
            # its own pinned 16-bit buffer (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu).
            off[f"gradient accumulation ({held}, per weight)"] = per_weight_pinned(job, 1, pin)
    elif job.stage == 3 and (oo != "none" or op != "none"):
        if oo != "none":
            off[f"gradient partition ({held})"] = pinned(p * psit / N, pin)
            groups = sub_groups(int(psit / N), b["sub_group_size"])
            if oo == "cpu":
                off["fp32 master"] = 4 * psit / N
                off[f"fp32 gradients ({held})"] = sum(pinned(4 * s, pin) for s in groups)
                off["optimizer states"] = 8 * psit / N
            else:
                largest = largest_sub_group(job)
                off["NVMe swap buffers (page-locked)"] = optimizer_swap_locked(job)
                # stage3.py initialize_optimizer_states: one fp32 gradient buffer of the largest sub-group,
                # zero-filled (so resident) on the host when the optimizer is offloaded
                off["fp32 gradient buffer (largest sub-group)"] = 4 * largest
                # CPU Adam creates a sub-group's two moments as new zero tensors at the first step of every
                # process (its state starts empty), and they live until that sub-group is swapped out
                off["Adam's first-step moments (largest sub-group)"] = 8 * largest
            off["CPU Adam"] = cal.CPU_ADAM_EXTRA_BYTES
            if op == "none" and job.on_gpu:
                off["step: a sub-group cast to 16 bits"] = step_cast(job)
        if op == "cpu":
            off[f"16-bit weights ({held})"] = pinned(p * psi / N, pin)
            if plan.zero_init and pin:
                off["zero.Init pinned blocks (cached)"] = sum(
                    pinned(p * n / N) * cnt for n, cnt in job.spec.param_shapes)
        elif op == "nvme":
            off["NVMe weight buffers (page-locked)"] = param_swap_locked(job)
            # stage3.py _create_param_groups_fp16_flat_cpu_memory: a pinned 16-bit buffer of up to max_in_cpu
            # (1e9) trainable weights; the sub-groups that fit it whole stay there and are never swapped
            off["16-bit weights in host RAM (pinned, max_in_cpu)"] = pinned(p * min(DS_PARAM_MAX_IN_CPU, psit / N))
    return off


def step_cast(job: Job) -> float:
    """Host bytes of the 16-bit copy the step makes of one sub-group's updated fp32 weights. With the
    weights on the GPU, stage3.py _reassign_or_swap_out_partitioned_parameters copies each sub-group's
    fp32 partition from the host into its 16-bit GPU partition, and PyTorch's copy_ across devices and
    dtypes casts on the host first: a temporary of 2 bytes per element of the sub-group, beside the
    sub-group's optimizer state. Seen in the worker's host RAM on an H100 (the 1.1B plan with 3e8 sub-groups,
    benchmarks/results/hostsnap-1b-nvme-sg3e8-gpu-2026-12-05.txt: +0.58 GiB at that line, the run's
    peak); it accounts for the 1.88 GiB the estimate was short on the sweep's 1.1B ZeRO-3 plan with the
    optimizer on the CPU and DeepSpeed's 1e9 sub-group (a-s3-cpu-mb8-ga2). Weights on the CPU or NVMe
    take the fp32 values on the host, where copy_ casts in place."""
    largest = largest_sub_group(job)
    return float(job.p * largest)


#: DeepSpeed's async I/O aligns each swap buffer to this many bytes (swap_tensor/utils.py AIO_ALIGNED_BYTES,
#: times intra_op_parallelism, 1 by default)
AIO_ALIGN = 1024


def _aligned(nbytes: float) -> int:
    return -(-int(nbytes) // AIO_ALIGN) * AIO_ALIGN


def optimizer_swap_locked(job: Job) -> int:
    """Host bytes one rank page-locks for the optimizer's NVMe swap: ``buffer_count`` (4) fp32 buffers of
    the largest sub-group (swap_tensor/utils.py SwapBufferManager). They come from DeepSpeed's own
    page-aligned, mlock()ed allocation (csrc/pin_memory/page_alloc.cpp), not PyTorch's pinned allocator,
    so they are not rounded up to a power of two, and they count against RLIMIT_MEMLOCK."""
    if job.stage != 3 or job.oo != "nvme":
        return 0
    largest = largest_sub_group(job)
    return (job.plan.offload_buffer_count or 4) * _aligned(4 * largest)


def param_swap_locked(job: Job) -> int:
    """Host bytes one rank page-locks for the weights' NVMe swap: ``buffer_count`` (5) 16-bit buffers of
    ``buffer_size`` elements (partitioned_param_swapper.py), and, with the optimizer's sub-groups not
    resident, a buffer to write a sub-group's updated weights back (reserve_partitioned_swap_space; sized
    by whole weights, as DeepSpeed does)."""
    if job.stage != 3 or job.op != "nvme":
        return 0
    p = job.p
    buffers = (job.plan.offload_buffer_count or 5) * _aligned(p * param_buffer_size(job.plan, job.spec))
    largest = max(sub_groups(int(job.psit), job.buckets["sub_group_size"]), default=0)
    return buffers + _aligned(p * largest)


def locked_bytes(job: Job) -> int:
    """Host bytes one rank page-locks through DeepSpeed's async I/O: what RLIMIT_MEMLOCK must allow."""
    return optimizer_swap_locked(job) + param_swap_locked(job)


def host_peak(job: Job, off: dict[str, float], saves: bool = True) -> tuple[str, dict[str, float]]:
    """(the moment host RAM peaks, its parts for one rank) on a machine with a GPU. ``saves``: the
    process writes checkpoints (every zerotui run does, at least at its end; the estimator's sweep
    harness never did)."""
    plan, p = job.plan, job.p
    zero_init_build = job.stage == 3 and plan.zero_init
    # QLoRA quantises each weight as it is loaded onto the GPU: what the host holds is at most the model
    # in its quantised form (safetensors are read shard by shard).
    whole = job.weight_bytes if job.quant_numel else p * job.spec.params_total
    load = cal.HOST_BASE_BYTES + (0 if zero_init_build else whole)
    after = float(cal.HOST_BASE_AFTER_INIT_BYTES)
    defrag = p * job.psit / job.N if (job.stage == 3 and job.oo == "none" and job.op == "none") else 0.0
    moments = {"loading the model": load, "after initialise": after + defrag + sum(off.values())}
    pageable = pinning_copy(job)
    if pageable:
        moments[PINNING] = after + sum(v for k, v in off.items() if k not in FIRST_STEP) + pageable
    copy = save_copy(job) if saves else 0.0
    if copy:
        moments["saving a checkpoint"] = moments["after initialise"] + copy
    phase = max(moments, key=moments.get)
    if phase == "loading the model":
        return phase, {"process (Python, torch, CUDA)": cal.HOST_BASE_BYTES,
                       "model loaded on the host": load - cal.HOST_BASE_BYTES}
    if phase == PINNING:
        return phase, {"process (Python, torch, CUDA)": after,
                       **{k: v for k, v in off.items() if k not in FIRST_STEP},
                       "gradient partition before pinning (pageable, freed after)": pageable}
    parts = {"process (Python, torch, CUDA)": after, **off}
    if defrag:
        parts["stage-3 partition copy (init)"] = defrag
    if phase == "saving a checkpoint":
        parts["checkpoint: a GPU buffer copied whole"] = copy
    return phase, parts


#: The moment ZeRO-3 pins its host gradient partition, before the first step (host_peak).
PINNING = "initialise: pinning the gradient partition"
#: Parts of ``offloaded`` that only the first optimizer step creates, not there yet at that moment: CPU
#: Adam makes its moments in its first step (core/train/optimizer_state.py leaves its state alone), and the
#: step's cast exists only in a step.
FIRST_STEP = ("Adam's first-step moments (largest sub-group)", "optimizer states",
              "step: a sub-group cast to 16 bits")


def pinning_copy(job: Job) -> float:
    """Host bytes of the pageable original while ZeRO-3 pins its gradient partition. With the optimizer
    offloaded, stage3.py _setup_for_real_optimizer makes the 16-bit flat buffer of every gradient
    partition with torch.zeros on the host, then pin_memory() copies it into a pinned block (rounded up
    to a power of two) and only then lets the original go: for a moment both are resident. Seen in the
    worker's host RAM trace on an H100 (1.1B, ZeRO-3, optimizer and weights on NVMe: +1.67 GiB at the
    zeros, +3.97 GiB at the pin, the run's peak at 12.93 GiB, before any step;
    benchmarks/results/hostsnap-1b-nvme-both-rd0-gpu-2026-12-05.txt). Held out: the same plan with only
    the optimizer on NVMe read 10.12 GiB against 9.95 estimated with this moment, 8.83 without
    (hostsnap-1b-nvme-sg-gpu-2026-12-05.txt). Only on a GPU: DeepSpeed's CPU accelerator does not pin."""
    if job.stage != 3 or job.oo == "none" or not job.plan.pin_memory or not job.on_gpu:
        return 0.0
    return float(job.p * job.psit / job.N)


def save_copy(job: Job) -> float:
    """Host bytes a checkpoint adds for a moment: torch.save copies each GPU tensor's whole storage to
    the host before writing it, one storage at a time, and ZeRO-1/2 keep the model's 16-bit weights in
    one flat buffer (stage_1_and_2.py, bit16_groups_flat) and, with the optimizer on the GPU, each fp32
    partition in another. Measured on a 3B full fine-tune at ZeRO-2 with the optimizer on the CPU
    (seed-scenarios-cards-h-2026-12-04.json): the processes' RSS went 76.2 -> 82.2 GiB while the end's
    checkpoint was written, the 6.0 GiB of its bf16 weights (the run before it, on a machine whose
    /dev/shm held 46 GB, was ended there by the kernel's OOM killer). The fp32 partition's copy follows
    from the same code and was not measured. Adapters save only themselves (exclude_frozen_parameters):
    nothing that size; stage 0 and 3 keep no such buffer of the whole model (not measured either)."""
    if not job.on_gpu or job.plan.uses_adapters() or job.stage not in (1, 2):
        return 0.0
    master = 4 * job.psit / job.N if job.oo == "none" else 0.0
    return max(job.p * job.psi, master)


def cpu_only(gpu_parts: dict[str, float], off: dict[str, float]) -> dict[str, float]:
    """No GPU: on DeepSpeed's CPU accelerator the "device" is host RAM too, so the device-side terms
    and the offloaded ones add up in the same memory (offloading to "cpu" only moves bytes within it)."""
    parts = {"process (Python, torch)": float(cal.HOST_BASE_BYTES)}
    for k, v in list(gpu_parts.items()) + list(off.items()):
        parts[k] = parts.get(k, 0.0) + v
    return parts


def nvme(job: Job) -> dict[str, float]:
    """Bytes written to the NVMe path by this node's ranks."""
    out: dict[str, float] = {}
    if job.oo == "nvme":
        out["optimizer states + fp32 master + gradients"] = 16 * job.psit / job.N * job.n_local
    if job.op == "nvme":
        out["16-bit weights"] = job.p * job.psi / job.N * job.n_local
    return out
