"""Host RAM of one rank (then the node) and NVMe bytes: what offload puts there, and start-up's peak.

Host RAM peaks either while the model is loaded (every rank builds it on the host unless stage 3
builds it partitioned with zero.Init) or after ``deepspeed.initialize``, when the offloaded states and
their pinned buffers exist. PyTorch's pinned allocator rounds each buffer up to a power of two
(``job.pinned``), which is counted.
"""
from __future__ import annotations

from zerotui.core.deepspeed.config import param_buffer_size
from zerotui.core.estimate import calibration as cal
from zerotui.core.estimate.job import Job, per_weight_pinned, pinned, sub_groups


def offloaded(job: Job) -> dict[str, float]:
    """Host bytes of one rank that optimizer / parameter offload adds."""
    plan, p, psi, psit, N = job.plan, job.p, job.psi, job.psit, job.N
    pin, b, oo, op = plan.pin_memory, job.buckets, job.oo, job.op
    off: dict[str, float] = {}
    if oo == "cpu" and job.stage in (1, 2):
        off["fp32 master (pinned)"] = pinned(4 * psit / N, pin)
        off["16-bit copy (pinned)"] = pinned(p * psit / N, pin)
        off["fp32 gradients (pinned)"] = pinned(4 * psit / N, pin)
        off["optimizer states"] = 8 * psit / N
        off["CPU Adam"] = cal.CPU_ADAM_EXTRA_BYTES
        if plan.grad_accum > 1:
            # Between accumulation boundaries each trainable weight's gradient is summed on the host in
            # its own pinned 16-bit buffer (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu).
            off["gradient accumulation (pinned, per weight)"] = per_weight_pinned(job, 1, pin)
    elif job.stage == 3 and (oo != "none" or op != "none"):
        if oo != "none":
            off["gradient partition (pinned)"] = pinned(p * psit / N, pin)
            groups = sub_groups(int(psit / N), b["sub_group_size"])
            if oo == "cpu":
                off["fp32 master"] = 4 * psit / N
                off["fp32 gradients (pinned)"] = sum(pinned(4 * s, pin) for s in groups)
                off["optimizer states"] = 8 * psit / N
            else:
                count = plan.offload_buffer_count or 4
                off["NVMe swap buffers (pinned)"] = count * pinned(4 * max(groups, default=0), pin)
            off["CPU Adam"] = cal.CPU_ADAM_EXTRA_BYTES
        if op == "cpu":
            off["16-bit weights (pinned)"] = pinned(p * psi / N, pin)
            if plan.zero_init and pin:
                off["zero.Init pinned blocks (cached)"] = sum(
                    pinned(p * n / N) * cnt for n, cnt in job.spec.param_shapes)
        elif op == "nvme":
            count = plan.offload_buffer_count or 5
            off["NVMe weight buffers (pinned)"] = count * pinned(p * param_buffer_size(plan, job.spec), pin)
    elif oo == "nvme" and job.stage in (1, 2):
        off["NVMe swap buffers (pinned)"] = 4 * pinned(4 * psit / N, pin)
        off["CPU Adam"] = cal.CPU_ADAM_EXTRA_BYTES
    return off


def host_peak(job: Job, off: dict[str, float]) -> tuple[str, dict[str, float]]:
    """(the moment host RAM peaks, its parts for one rank) on a machine with a GPU."""
    plan, p = job.plan, job.p
    zero_init_build = job.stage == 3 and plan.zero_init
    # QLoRA quantises each weight as it is loaded onto the GPU: what the host holds is at most the model
    # in its quantised form (safetensors are read shard by shard).
    whole = job.weight_bytes if job.quant_numel else p * job.spec.params_total
    load = cal.HOST_BASE_BYTES + (0 if zero_init_build else whole)
    after = float(cal.HOST_BASE_AFTER_INIT_BYTES)
    defrag = p * job.psit / job.N if (job.stage == 3 and job.oo == "none" and job.op == "none") else 0.0
    moments = {"loading the model": load, "after initialise": after + defrag + sum(off.values())}
    phase = max(moments, key=moments.get)
    if phase == "loading the model":
        return phase, {"process (Python, torch, CUDA)": cal.HOST_BASE_BYTES,
                       "model loaded on the host": load - cal.HOST_BASE_BYTES}
    parts = {"process (Python, torch, CUDA)": after, **off}
    if defrag:
        parts["stage-3 partition copy (init)"] = defrag
    return phase, parts


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
