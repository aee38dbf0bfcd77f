"""estimate(plan, hardware) -> Budget: peak GPU memory per GPU, host RAM per node and NVMe bytes.

The GPU peak is the largest of the moments a training step goes through, each a sum of named parts:

    forward    model states + gradients kept from earlier micro-batches + activations + logits/loss
    backward   the same with the loss's fp32 gradients (the usual peak)
    grads      a stage-0/1/2 gradient buffer appearing while every activation is still held
    recompute  (checkpointing) one layer rebuilt with its gradients, late in backward
    step       model states + gradients + the optimizer step's fp32 gradient copy

Model states follow DeepSpeed 0.19.8's allocations (deepspeed/runtime/zero/stage_1_and_2.py,
stage3.py, fp16/fused_optimizer.py) as measured on an H200 (benchmarks/results/estimator-*.json):

    stage 0      p·Ψ weights + 4Ψt fp32 master + 8Ψt Adam; p·Ψt gradients; step +8Ψt
    stage 1/2    p·Ψ weights + 12Ψt/N; gradients p·Ψt (stage 1) or p·Ψt/N (stage 2); step +6Ψt/N
    stage 3      p·Ψ/N weights + p·Ψt/N gradient partition + 12Ψt/N; step +6·min(sub_group, Ψt/N)
    offload      the fp32 master, Adam moments and fp32 gradients move to (pinned) host memory;
                 PyTorch's pinned allocator rounds each buffer up to a power of two, which is counted.

Symbols as in docs/estimator.md: Ψ parameters, Ψt trainable, N GPUs in all, p bytes of the 16-bit type.
Pure and fast (well under 5 ms): the wizard calls it on every keystroke.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from . import memory_calibration as cal
from .dsconfig import bucket_sizes, param_buffer_size
from .hardware_types import Hardware
from .memory_activations import LoraShape, logits_bytes, model_bytes_per_token, recompute_bytes_per_token
from .memory_deepspeed import deepspeed_estimate
from .models import ModelSpec, lora_targets_found, spec_for_plan


@dataclass
class Budget:
    gpu_bytes: int                 # what must fit in one GPU: predicted peak reserved + CUDA context
    gpu_allocated_bytes: int       # predicted peak of torch.cuda.max_memory_allocated() while training
    cpu_bytes: int                 # peak host RAM of one node (all its ranks)
    nvme_bytes: int                # bytes written to the NVMe path (all ranks of a node)
    gpu_capacity: int
    cpu_capacity: int
    nvme_capacity: int
    fits: bool
    breakdown: dict[str, dict[str, int]]
    warnings: list[str] = field(default_factory=list)
    peak_phase: str = ""
    host_phase: str = ""
    world_size: int = 1
    params_total: int = 0
    params_trainable: int = 0
    deepspeed_estimate: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu_bytes": self.gpu_bytes, "gpu_allocated_bytes": self.gpu_allocated_bytes,
            "cpu_bytes": self.cpu_bytes, "nvme_bytes": self.nvme_bytes, "fits": self.fits,
            "gpu_capacity": self.gpu_capacity, "cpu_capacity": self.cpu_capacity,
            "nvme_capacity": self.nvme_capacity, "peak_phase": self.peak_phase, "host_phase": self.host_phase,
            "world_size": self.world_size,
            "params_total": self.params_total, "params_trainable": self.params_trainable,
            "breakdown": self.breakdown, "warnings": list(self.warnings),
            "deepspeed_estimate": self.deepspeed_estimate,
        }


def pinned(nbytes: float, pin: bool = True) -> int:
    """Host bytes a pinned buffer really takes: PyTorch's CachingHostAllocator rounds each request up
    to a power of two (c10 PowerOf2Ceil); measured on the CPU-offload rows, where it is up to 2x."""
    n = int(nbytes)
    if not pin or n <= 0:
        return max(n, 0)
    return 1 << (n - 1).bit_length()


def _sub_groups(numel: int, size: int) -> list[int]:
    """Stage 3 splits the optimizer's partition into sub-groups of about ``size`` elements."""
    if numel <= 0:
        return []
    full, rest = divmod(numel, size)
    return [size] * full + ([rest] if rest else [])


def _nvme_capacity(plan, hw: Hardware) -> int:
    disks = hw.nvme_disks or []
    if plan.nvme_path is not None:
        path = str(plan.nvme_path)
        best = None
        for d in hw.disks:
            if d.mountpoint and path.startswith(d.mountpoint) and (best is None or len(d.mountpoint) > len(best.mountpoint)):
                best = d
        if best is not None:
            return int(best.free_bytes)
    return max((int(d.free_bytes) for d in disks), default=0)


def _lora(plan, spec: ModelSpec, on_gpu: bool) -> Optional[LoraShape]:
    if plan.method != "lora":
        return None
    p = 4 if plan.precision == "fp32" else 2
    return LoraShape(frozenset(lora_targets_found(spec, plan.lora_targets)), plan.lora_r, plan.lora_dropout,
                     mask_bytes=1 if on_gpu else p)


def _largest_trainable(plan, spec: ModelSpec) -> int:
    if plan.method != "lora":
        return spec.largest_param_numel
    found = lora_targets_found(spec, plan.lora_targets)
    return max((plan.lora_r * max(i, o) for hits in found.values() for i, o, _ in hits), default=0)


def _per_weight_pinned(plan, spec: ModelSpec, p: int, n: int, pin: bool) -> int:
    """Host bytes of one pinned buffer per trainable weight (each rounded up on its own)."""
    if plan.method == "lora":
        found = lora_targets_found(spec, plan.lora_targets)
        return sum((pinned(p * plan.lora_r * i / n, pin) + pinned(p * plan.lora_r * o / n, pin)) * c
                   for hits in found.values() for i, o, c in hits)
    return sum(pinned(p * numel / n, pin) * cnt for numel, cnt in spec.param_shapes)


def _persistent_params(spec: ModelSpec, threshold: int) -> int:
    """Stage 3 keeps parameters of at most ``threshold`` elements whole on every GPU (norms, biases)."""
    return sum(n * c for n, c in spec.param_shapes if n <= threshold)


def estimate(plan, hardware: Optional[Hardware] = None, spec: Optional[ModelSpec] = None) -> Budget:
    """The memory budget of ``plan`` on ``hardware`` (stated or detected). Raises ModelError for an
    unknown model or a LoRA target the model lacks."""
    spec = spec if spec is not None else spec_for_plan(plan)
    hw = hardware if hardware is not None else Hardware()
    on_gpu = hw.gpu_count > 0
    n_local = plan.gpus_per_node(hw.gpu_count)
    N = n_local * plan.nodes
    p = 4 if plan.precision == "fp32" else 2
    lora = _lora(plan, spec, on_gpu)
    lora_params = 0
    if lora is not None:
        found = lora_targets_found(spec, plan.lora_targets)
        lora_params = sum(plan.lora_r * (i + o) * c for hits in found.values() for i, o, c in hits)
    psi = spec.params_total + lora_params
    psit = lora_params if lora is not None else psi
    b = bucket_sizes(plan, spec)
    stage, oo, op = plan.stage, plan.offload_optimizer, plan.offload_params
    warnings: list[str] = []

    # -- model states on one GPU -------------------------------------------------------------------
    g: dict[str, float] = {}
    grads = 0.0            # gradient storage while backward runs (freed by the step), 0 if kept in states
    grads_early = False    # allocated at the first reduced bucket: present while activations still are
    step_transient = 0.0
    fp16_master = p < 4    # fp32 training keeps a separate fp32 master copy too, measured 8 bytes/param
    if stage == 0:
        g["weights"] = p * psi
        g["fp32 master"] = 4 * psit if fp16_master else 0
        g["optimizer states"] = 8 * psit
        grads = p * psit
        step_transient = 8 * psit if fp16_master else 0
    elif stage in (1, 2):
        g["weights"] = p * psi
        if oo == "none":
            g["fp32 master"] = 4 * psit / N
            g["optimizer states"] = 8 * psit / N
            grads = p * psit if stage == 1 else p * psit / N
            grads_early = stage == 2
            step_transient = (6 if p < 4 else 4) * psit / N
            g["communication buckets"] = (2 if plan.overlap_comm else 1) * p * b["reduce_bucket_size"]
        else:
            g["offload gradient staging"] = p * _largest_trainable(plan, spec) + cal.OFFLOAD_GPU_EXTRA_BYTES
            g["communication buckets"] = (2 if plan.overlap_comm else 1) * p * b["reduce_bucket_size"]
    else:
        persistent = _persistent_params(spec, b["stage3_param_persistence_threshold"])
        if op == "none":
            g["weights"] = p * psi / N + p * persistent * (1 - 1 / N)
        else:
            g["weights"] = p * persistent
        if oo == "none":
            g["gradients (partition)"] = p * psit / N
            g["fp32 master"] = 4 * psit / N
            g["optimizer states"] = 8 * psit / N
            step_transient = (6 if p < 4 else 4) * min(b["sub_group_size"], psit / N)
        else:
            g["offload gradient staging"] = cal.OFFLOAD_GPU_EXTRA_BYTES
        g["communication buckets"] = p * b["reduce_bucket_size"]
        gathered = min(b["stage3_max_live_parameters"], psi)
        if op != "none":
            g["stage-3 working set"] = p * gathered
        elif N > 1:
            g["stage-3 working set"] = p * gathered * (1 - 1 / N)

    # -- activations and the loss ------------------------------------------------------------------
    tokens = plan.micro_batch * plan.seq_len
    attention = "sdpa" if plan.attention == "flash" else plan.attention
    zero3_linear = stage == 3  # its linear keeps every input, frozen or not (memory_activations.py)
    saved = tokens * model_bytes_per_token(spec, p, attention, plan.seq_len, lora, plan.grad_ckpt, zero3_linear)
    lg = logits_bytes(tokens, spec.vocab_size, p)
    grads_prev = grads if plan.grad_accum > 1 else 0.0
    phases: dict[str, dict[str, float]] = {
        "forward": {"gradients": grads_prev, "activations": saved, "logits/loss": lg["forward_peak"]},
        "backward": {"gradients": grads_prev, "activations": saved, "logits/loss": lg["backward_peak"]},
        "step": {"gradients": grads, "optimizer step (fp32 gradients)": step_transient},
    }
    if grads:
        phases["grads"] = {"gradients": grads, "activations": saved, "logits/loss": lg["grad_logits"]}
    if plan.grad_ckpt:
        phases["recompute"] = {"gradients": grads if grads_early else grads_prev, "activations": saved,
                               "activations (recomputed layer)":
                                   tokens * recompute_bytes_per_token(spec, p, attention, plan.seq_len, lora,
                                                                    zero3_linear)}
    peak_phase = max(phases, key=lambda k: sum(phases[k].values()))
    for name, v in phases[peak_phase].items():
        if v:
            g[name] = g.get(name, 0) + v
    allocated = sum(g.values())
    if stage == 0:
        first_step = cal.FRAGMENTATION_STAGE0_STEP_SHARE * step_transient
    else:
        first_step = cal.FRAGMENTATION_FIRST_STEP_SHARE * (g.get("optimizer states", 0) + step_transient)
    margin = max(cal.FRAGMENTATION_FRACTION * allocated, cal.FRAGMENTATION_LOGITS_SHARE * lg["backward_peak"],
                 first_step, cal.FRAGMENTATION_MIN_BYTES)

    # -- host RAM (one rank, then the node) -------------------------------------------------------
    c: dict[str, float] = {}
    pin = plan.pin_memory
    zero_init_build = stage == 3 and plan.zero_init
    load = cal.HOST_BASE_BYTES + (0 if zero_init_build else p * spec.params_total)
    after = float(cal.HOST_BASE_AFTER_INIT_BYTES)
    off: dict[str, float] = {}
    if oo == "cpu" and stage in (1, 2):
        off["fp32 master (pinned)"] = pinned(4 * psit / N, pin)
        off["16-bit copy (pinned)"] = pinned(p * psit / N, pin)
        off["fp32 gradients (pinned)"] = pinned(4 * psit / N, pin)
        off["optimizer states"] = 8 * psit / N
        off["CPU Adam"] = cal.CPU_ADAM_EXTRA_BYTES
        if plan.grad_accum > 1:
            # Between accumulation boundaries each trainable weight's gradient is summed on the host in
            # its own pinned 16-bit buffer (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu).
            off["gradient accumulation (pinned, per weight)"] = _per_weight_pinned(plan, spec, p, 1, pin)
    elif stage == 3 and (oo != "none" or op != "none"):
        if oo != "none":
            off["gradient partition (pinned)"] = pinned(p * psit / N, pin)
            groups = _sub_groups(int(psit / N), b["sub_group_size"])
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
                    pinned(p * n / N) * cnt for n, cnt in spec.param_shapes)
        elif op == "nvme":
            count = plan.offload_buffer_count or 5
            off["NVMe weight buffers (pinned)"] = count * pinned(p * param_buffer_size(plan, spec), pin)
    elif oo == "nvme" and stage in (1, 2):
        off["NVMe swap buffers (pinned)"] = 4 * pinned(4 * psit / N, pin)
        off["CPU Adam"] = cal.CPU_ADAM_EXTRA_BYTES
    defrag = p * psit / N if (stage == 3 and oo == "none" and op == "none") else 0.0
    candidates = {"loading the model": load, "after initialise": after + defrag + sum(off.values())}
    host_phase = max(candidates, key=candidates.get)
    if host_phase == "loading the model":
        c = {"process (Python, torch, CUDA)": cal.HOST_BASE_BYTES,
             "model loaded on the host": load - cal.HOST_BASE_BYTES}
    else:
        c = {"process (Python, torch, CUDA)": after, **off}
        if defrag:
            c["stage-3 partition copy (init)"] = defrag
    nvme: dict[str, float] = {}
    if oo == "nvme":
        nvme["optimizer states + fp32 master + gradients"] = 16 * psit / N * n_local
    if op == "nvme":
        nvme["16-bit weights"] = p * psi / N * n_local
    if not on_gpu:
        warnings.append("no GPU: training runs on the CPU, so its memory counts as host RAM")
        # On DeepSpeed's CPU accelerator the "device" is host RAM too, so the device-side terms and the
        # offloaded ones add up in the same memory (offloading to "cpu" only moves bytes within it).
        c = {"process (Python, torch)": float(cal.HOST_BASE_BYTES)}
        for k, v in list(g.items()) + list(off.items()):
            c[k] = c.get(k, 0.0) + v
    per_rank_host = sum(c.values())
    cpu_total = int(per_rank_host * n_local)
    breakdown = {
        "gpu": {k: int(v) for k, v in g.items() if v} if on_gpu else {},
        "cpu": {k: int(v * n_local) for k, v in c.items() if v},
        "nvme": {k: int(v) for k, v in nvme.items() if v},
    }
    if on_gpu:
        breakdown["gpu"]["fragmentation margin"] = int(margin)
        breakdown["gpu"]["CUDA context"] = cal.CUDA_CONTEXT_BYTES
    gpu_bytes = int(allocated + margin + cal.CUDA_CONTEXT_BYTES) if on_gpu else 0
    gpu_cap = hw.gpu_total_bytes if on_gpu else 0
    cpu_cap = int(hw.ram_total_bytes or 0)
    nvme_cap = _nvme_capacity(plan, hw) if plan.uses_nvme() else 0
    nvme_total = int(sum(nvme.values()))
    fits = (not on_gpu or gpu_bytes <= gpu_cap) and (not cpu_cap or cpu_total <= cpu_cap) and \
        (nvme_total == 0 or nvme_total <= nvme_cap)
    if cpu_cap and hw.ram_available_bytes and cpu_total > hw.ram_available_bytes and cpu_total <= cpu_cap:
        warnings.append("host RAM needed is more than is free now; other programs may have to close")
    if not spec.calibrated:
        warnings.append(f"activation memory for '{spec.arch}' models is extrapolated from the Llama family")
    if plan.uses_nvme():
        warnings.append("NVMe offload figures follow DeepSpeed's buffer rules; they were not measured")
    if N > 1:
        warnings.append("per-GPU shares for several GPUs follow DeepSpeed's partitioning; measured on one GPU")
    return Budget(
        gpu_bytes=gpu_bytes, gpu_allocated_bytes=int(allocated) if on_gpu else 0, cpu_bytes=cpu_total,
        nvme_bytes=nvme_total, gpu_capacity=int(gpu_cap), cpu_capacity=cpu_cap, nvme_capacity=int(nvme_cap),
        fits=bool(fits), breakdown=breakdown, warnings=warnings, peak_phase=peak_phase, host_phase=host_phase,
        world_size=N,
        params_total=int(psi), params_trainable=int(psit),
        deepspeed_estimate=deepspeed_estimate(plan, spec, int(psi), n_local))
