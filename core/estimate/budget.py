"""estimate(plan, hardware) -> Budget: peak GPU memory per GPU, host RAM per node and NVMe bytes.

Model states follow DeepSpeed 0.19.8's allocations as measured on an H200
(benchmarks/results/estimator-*.json):

    stage 0      p·Ψ weights + 4Ψt fp32 master + 8Ψt Adam; p·Ψt gradients; step +8Ψt
    stage 1/2    p·Ψ weights + 12Ψt/N; gradients p·Ψt (stage 1) or p·Ψt/N (stage 2); step +6Ψt/N
    stage 3      p·Ψ/N weights + p·Ψt/N gradient partition + 12Ψt/N; step +6·min(sub_group, Ψt/N)
    offload      the fp32 master, Adam moments and fp32 gradients move to (pinned) host memory;
                 PyTorch's pinned allocator rounds each buffer up to a power of two, which is counted.

One module per component: ``job`` (the derived quantities), ``gpu`` (model states and the step's peak),
``activations`` (what autograd keeps), ``host`` (host RAM and NVMe). Symbols as in docs/estimator.md: Ψ
parameters, Ψt trainable, N GPUs in all, p bytes of the 16-bit type.
Pure and fast (well under 5 ms): the wizard calls it on every keystroke.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from zerotui.core.estimate.cuda_context import context_bytes
from zerotui.core.estimate.offload12 import POOL, POOL_LABEL
from zerotui.core.estimate import gpu, host
from zerotui.core.estimate.ds_estimators import deepspeed_estimate
from zerotui.core.estimate.job import Job, job_for
from zerotui.core.hardware.disks import disk_for_path, free_bytes_at, not_a_folder_here
from zerotui.core.hardware.types import Hardware
from zerotui.core.model.spec import ModelSpec, spec_for_plan
from zerotui.core.sizes import format_bytes


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
    locked_bytes: int = 0          # host RAM one rank page-locks for NVMe swap buffers (RLIMIT_MEMLOCK)
    nvme_problem: str = ""         # why the NVMe room is unknown (nvme_path is a file here); "" when known

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu_bytes": self.gpu_bytes, "gpu_allocated_bytes": self.gpu_allocated_bytes,
            "cpu_bytes": self.cpu_bytes, "nvme_bytes": self.nvme_bytes, "fits": self.fits,
            "gpu_capacity": self.gpu_capacity, "cpu_capacity": self.cpu_capacity,
            "nvme_capacity": self.nvme_capacity, "peak_phase": self.peak_phase, "host_phase": self.host_phase,
            "world_size": self.world_size,
            "params_total": self.params_total, "params_trainable": self.params_trainable,
            "breakdown": self.breakdown, "warnings": list(self.warnings),
            "deepspeed_estimate": self.deepspeed_estimate, "locked_bytes": self.locked_bytes,
            "nvme_problem": self.nvme_problem or None,
        }

    def summary(self, separator: str = ", ") -> str:
        """'GPU 30.2 GiB of 23.6 GiB per GPU (too much), host RAM 80.0 GiB of 251.5 GiB': what needs what
        it has, the parts that do not fit first."""
        parts = []
        for label, need, cap in (("GPU", self.gpu_bytes, self.gpu_capacity),
                                 ("host RAM", self.cpu_bytes, self.cpu_capacity),
                                 ("NVMe", self.nvme_bytes, self.nvme_capacity)):
            if not need and not cap:
                continue
            text = f"{label} {format_bytes(need)}" + (f" of {format_bytes(cap)}" if cap else "")
            text += " per GPU" if label == "GPU" else ""
            unknown = label == "NVMe" and bool(self.nvme_problem) and not cap
            if unknown:
                parts.append((0, text + " (room unknown: the NVMe path is not a folder)"))
                continue
            over = bool(cap) and need > cap
            parts.append((0 if over else 1, text + (" (too much)" if over else "")))
        return separator.join(t for _, t in sorted(parts, key=lambda p: p[0])) or "no capacity known"


def estimate(plan, hardware: Optional[Hardware] = None, spec: Optional[ModelSpec] = None,
             env: Optional[Mapping[str, str]] = None, masked: Optional[bool] = None) -> Budget:
    """The memory budget of ``plan`` on ``hardware`` (stated or detected). Raises ModelError for an
    unknown model or a LoRA target the model lacks. ``env``: the environment the run starts from (this
    process's when None; it decides PyTorch's allocator setting, core/plan/allocator.py). ``masked``:
    see job.job_for."""
    spec = spec if spec is not None else spec_for_plan(plan)
    hw = hardware if hardware is not None else Hardware()
    job = job_for(plan, spec, hw, env, masked=masked)
    peak = gpu.peak(job, gpu.model_states(job))
    off = host.offloaded(job)
    if job.on_gpu:
        host_phase, cpu_parts = host.host_peak(job, off)
    else:
        host_phase, cpu_parts = host.host_peak(job, off)[0], host.cpu_only(peak.parts, off)
    nvme = host.nvme(job)
    in_ram = _nvme_in_ram(plan, hw)
    if in_ram:  # swap files on tmpfs are host RAM (DeepSpeed swaps there without complaint)
        cpu_parts[f"NVMe swap files (in RAM: {in_ram})"] = sum(nvme.values()) / job.n_local
    breakdown = {
        "gpu": {k: int(v) for k, v in peak.parts.items() if v} if job.on_gpu else {},
        "cpu": {k: int(v * job.n_local) for k, v in cpu_parts.items() if v},
        "nvme": {k: int(v) for k, v in nvme.items() if v},
    }
    if job.on_gpu:
        # offload12.init_floor: the pool DeepSpeed's initialisation leaves is not fragmentation; named apart
        pool = int(peak.margin_terms.get(POOL, 0.0))
        breakdown["gpu"]["fragmentation margin"] = int(peak.margin) - pool
        if pool:
            breakdown["gpu"][POOL_LABEL] = pool
        breakdown["gpu"]["CUDA context"] = context_bytes(plan, job.N)
    gpu_bytes = int(peak.allocated + peak.margin + breakdown["gpu"]["CUDA context"]) if job.on_gpu else 0
    cpu_total = int(sum(cpu_parts.values()) * job.n_local)
    nvme_total = int(sum(nvme.values()))
    gpu_cap = hw.gpu_total_bytes if job.on_gpu else 0
    if job.on_gpu and plan.gpu_mem_cap:  # the run's allocator is capped to it (train/memory_cap.py)
        gpu_cap = min(gpu_cap, plan.gpu_mem_cap) if gpu_cap else plan.gpu_mem_cap
    cpu_cap = host_room(hw)
    nvme_cap, nvme_problem = _nvme_capacity(plan, hw) if plan.uses_nvme() else (0, "")
    # An NVMe path that is a file here leaves the room unknown, not short: like host RAM without a figure,
    # no check (estimate and export only warn of it: the plan may be for another machine; train refuses)
    fits = (not job.on_gpu or gpu_bytes <= gpu_cap) and (not cpu_cap or cpu_total <= cpu_cap) and \
        (nvme_total == 0 or nvme_total <= nvme_cap or bool(nvme_problem and not nvme_cap))
    return Budget(
        gpu_bytes=gpu_bytes, gpu_allocated_bytes=int(peak.allocated) if job.on_gpu else 0, cpu_bytes=cpu_total,
        nvme_bytes=nvme_total, gpu_capacity=int(gpu_cap), cpu_capacity=cpu_cap, nvme_capacity=int(nvme_cap),
        fits=bool(fits), breakdown=breakdown,
        warnings=_warnings(job, cpu_total, cpu_cap, in_ram) + _nvme_note(nvme_problem, nvme_cap),
        peak_phase=peak.phase, host_phase=host_phase, world_size=job.N,
        params_total=int(job.psi), params_trainable=int(job.psit),
        deepspeed_estimate=deepspeed_estimate(plan, spec, int(job.psi), job.n_local),
        locked_bytes=host.locked_bytes(job), nvme_problem=nvme_problem if not nvme_cap else "")


def _nvme_note(problem: str, cap: int) -> list[str]:
    """The budget's own word on an NVMe path that is not a folder here (estimate and export only warn: the
    plan may be for another machine); the figure it used instead, when one was stated."""
    if not problem:
        return []
    if cap:
        return [f"the NVMe path {problem} here; the NVMe room is the stated or listed NVMe disk's, "
                f"{format_bytes(cap)} free"]
    return [f"NVMe room unknown: {problem}, so the free space of the disk holding it is not the room and "
            "the verdict leaves NVMe out; give --nvme-path a folder, or state the room of the machine the plan "
            "is for with --nvme-free"]


#: Host RAM a run cannot have however free the machine looks: the kernel's own memory, page cache it cannot
#: drop in time, zerotui's supervisor. On a 125.8 GiB H100 host whose free RAM read 123.6 GiB at the start,
#: two 7B runs were ended by the kernel's OOM killer with the worker at 119.6 and 119.7 GiB, one pinned at its
#: first step, one unpinned at its second (benchmarks/results/seed-scenarios-full7b*-h100-2026-12-05.json):
#: 4.0 GiB of "available" (3.2% of the total) was not the run's. Kept: 5% of the total, at least 2 GiB (a
#: quarter of a machine smaller than 8 GiB).
SYSTEM_RESERVE_SHARE = 0.05
SYSTEM_RESERVE_MIN_BYTES = 2 * 2**30


def system_reserve(total: int) -> int:
    """Host RAM kept out of a run's budget on a machine of ``total`` bytes (0 when the total is unknown)."""
    return int(max(min(SYSTEM_RESERVE_MIN_BYTES, total / 4), SYSTEM_RESERVE_SHARE * total)) if total else 0


def host_room(hw: Hardware) -> int:
    """The host RAM a run can have: what is free now (psutil's available: reclaimable page cache counts,
    other programs and files in a tmpfs such as /dev/shm do not), within the machine's total, less the
    system's reserve (``system_reserve``). A run that needs more is ended by the kernel's OOM killer
    without a message, possibly hours in, at its first checkpoint (docs/estimator.md, "Host RAM while a
    checkpoint is written": a 3B run that the total RAM had room for died that way with 46 GB of files in
    /dev/shm). Stated hardware has no separate figure: its RAM is taken as free."""
    total, free = int(hw.ram_total_bytes or 0), int(hw.ram_available_bytes or 0)
    room = min(total, free) if total and free else total
    # 1, not 0, when the reserve takes it all: a capacity of 0 means "no figure" (no host check)
    return max(1, room - system_reserve(total)) if room else 0


def _nvme_in_ram(plan, hw: Hardware) -> Optional[str]:
    """The filesystem type when the plan's NVMe folder is on this machine and in RAM (tmpfs, ramfs); None
    otherwise, and for stated hardware (a plan for another machine)."""
    if not plan.uses_nvme() or plan.nvme_path is None or hw.source == "stated":
        return None
    from zerotui.core.hardware.disks import RAM_FS, fstype_at

    kind = fstype_at(plan.nvme_path)
    return kind if kind in RAM_FS else None


def _warnings(job: Job, cpu_total: int, cpu_cap: int, nvme_in_ram: Optional[str] = None) -> list[str]:
    out = []
    if nvme_in_ram:
        out.append(f"the NVMe folder is in RAM ({nvme_in_ram}): its swap files are counted in host RAM, beside "
                   "the swap buffers; a folder on a disk, or --offload-optimizer cpu, spares that")
    if not job.on_gpu:
        out.append("no GPU: training runs on the CPU, so its memory counts as host RAM")
    card = int(job.hw.gpu_total_bytes or 0)
    if job.on_gpu and job.plan.gpu_mem_cap and card and job.plan.gpu_mem_cap >= card:
        out.append(f"the GPU memory cap {format_bytes(job.plan.gpu_mem_cap)} is not below the card's "
                   f"{format_bytes(card)}, so it limits nothing; a cap below it stands in for a smaller card")
    total = int(job.hw.ram_total_bytes or 0)
    if cpu_cap and cpu_total > cpu_cap and cpu_total <= total:
        out.append(f"host RAM is judged against what is free now, less {format_bytes(system_reserve(total))} "
                   f"kept for the system ({format_bytes(cpu_cap)} of {format_bytes(total)}): other programs, or "
                   "files in /dev/shm, hold the rest")
    if not job.spec.calibrated:
        out.append(f"activation memory for '{job.spec.arch}' models is extrapolated from the Llama family")
    if job.plan.uses_nvme():
        # Host RAM: the two 1.1B runs on an H200 (docs/nvme_offload.md) were 25.6% above the estimate until
        # host.py counted the sub-group's gradient buffer, CPU Adam's first-step moments and the step's
        # 16-bit cast; the H100 runs with zerotui's settings read at or below it, except weights on NVMe
        # (6.2% above, a reading that may hold a not-yet-exec'd fork: core/hardware/telemetry.py). No
        # warning on one doubtful reading.
        if job.op == "nvme" and job.buckets["stage3_max_reuse_distance"] > 0:
            # zerotui's own choice is 0 (deepspeed/config.py NVME_PARAMS_REUSE_DISTANCE); this plan set another
            out.append(f"weights on NVMe with stage3_max_reuse_distance {job.buckets['stage3_max_reuse_distance']}: "
                       "DeepSpeed 0.19.8's swapper runs out of buffers at the second step (on an H200 and on the "
                       "CPU); leave it unset (0) or use --offload-params cpu")
    if job.N > 1:
        out.append("per-GPU shares for several GPUs follow DeepSpeed's partitioning; measured on one GPU")
    return out


def _nvme_capacity(plan, hw: Hardware) -> tuple[int, str]:
    """(free bytes where the NVMe offload will write, why that is unknown): the listed disk holding
    nvme_path; on this machine when its disks were not listed (a launch skips that probe), the free space
    there, asked of the filesystem (for a folder not made yet: at its nearest parent); else the largest
    NVMe. A path that is a file here (or lies under one) has no room on this machine: the disk holding the
    file is not where DeepSpeed could write. Detected hardware then has no figure (0, with the reason);
    stated hardware (planning for another machine) keeps the stated or listed NVMe disk's."""
    problem = not_a_folder_here(plan.nvme_path) if plan.nvme_path is not None else None
    if problem is not None:
        if hw.source == "detected":
            return 0, problem
    elif plan.nvme_path is not None:
        best = disk_for_path(plan.nvme_path, hw.disks)
        if best is not None:
            return int(best.free_bytes), ""
        if hw.source == "detected":
            free = free_bytes_at(plan.nvme_path)
            if free is not None:
                return free, ""
    return max((int(d.free_bytes) for d in hw.nvme_disks or []), default=0), problem or ""
