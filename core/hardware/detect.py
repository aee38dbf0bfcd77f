"""What this machine has: GPUs (NVML), CPU, RAM and swap (psutil, cgroup limits), /dev/shm and disks.

``detect()`` runs when the wizard starts, so it imports no torch and touches no CUDA context (a CUDA
context costs ~0.5 GB of GPU memory and seconds); it takes well under 0.3 s. It never raises: whatever
cannot be read (no NVIDIA driver, no /sys, a mount that refuses stat) is left at its default and the
reason goes into ``Hardware.nvml_error`` (GPUs) or ``Hardware.notes`` (everything else).

``stated_hardware()`` is the same record from what a user says (``--gpu-mem 24GiB --ram 64GiB``), to plan
for a machine that is not this one.
"""
from __future__ import annotations

import copy
import os
import platform
from dataclasses import replace
from typing import Optional, Union

from zerotui.core.hardware.disks import list_disks, measure_write, probe_write_speed  # noqa: F401 - re-exported API
from zerotui.core.errors import PlanError
from zerotui.core.hardware.types import DiskInfo, GpuInfo, Hardware
from zerotui.core.hardware.hostmem import read_host_memory
from zerotui.core.hardware.nvml import NvmlSession, VisibleGpu
from zerotui.core.sizes import format_bytes, parse_size  # noqa: F401 - parse_size is part of this module's API

__all__ = ["detect", "stated_hardware", "parse_size", "probe_write_speed", "measure_write", "gpus_from_nvml"]

# Without these a GPU cannot be planned for; a failing PCIe or power query (common on consumer cards and
# in VMs: NVML_ERROR_NOT_SUPPORTED) only leaves that field empty.
_ESSENTIAL = ("nvmlDeviceGetName", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetCudaComputeCapability")


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _read_gpu(session: NvmlSession, vg: VisibleGpu) -> GpuInfo:
    errors: list[str] = []

    def query(fn: str):
        value, why = session.call(fn, vg.handle)
        if why:
            errors.append(why)
        return value

    name = query("nvmlDeviceGetName")
    mem = query("nvmlDeviceGetMemoryInfo")
    cc = query("nvmlDeviceGetCudaComputeCapability")
    uuid = query("nvmlDeviceGetUUID")
    # The max link the device *and slot* allow: the current generation drops when the GPU idles, so it
    # would misreport a healthy Gen4 x16 link as Gen1 whenever the wizard happens to look.
    gen = query("nvmlDeviceGetMaxPcieLinkGeneration")
    width = query("nvmlDeviceGetMaxPcieLinkWidth")
    power_mw = query("nvmlDeviceGetEnforcedPowerLimit")
    capability = (int(cc[0]), int(cc[1])) if cc else (0, 0)
    return GpuInfo(
        index=vg.index,
        name=_text(name) if name is not None else "unknown NVIDIA GPU",
        total_bytes=int(mem.total) if mem is not None else 0,
        free_bytes=int(mem.free) if mem is not None else 0,
        compute_capability=capability,
        # bf16 tensor cores arrived with Ampere, compute capability 8.0 (CUDA C Programming Guide,
        # "Compute Capabilities"); V100 (7.0) and T4 (7.5) emulate it slowly or not at all.
        bf16=capability >= (8, 0),
        uuid=_text(uuid) if uuid is not None else "",
        pcie_gen=int(gen) if gen is not None else None,
        pcie_width=int(width) if width is not None else None,
        power_limit_w=power_mw / 1000.0 if power_mw is not None else None,
        nvml_index=vg.nvml_index,
        error="; ".join(errors),
    )


def gpus_from_nvml(session: NvmlSession, env: Optional[str] = None) -> tuple[list[GpuInfo], list[str]]:
    """The visible GPUs and notes on what could not be read about them."""
    gpus = [_read_gpu(session, vg) for vg in session.visible(env)]
    notes = list(session.notes)
    for g in gpus:
        bad = [e for e in g.error.split("; ") if e.split(":")[0] in _ESSENTIAL]
        if bad:
            notes.append(f"GPU {g.index}: {'; '.join(bad)} (its memory or bf16 support is unknown)")
    names = {g.name for g in gpus}
    if len(names) > 1 and os.environ.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        notes.append("GPUs of different models: CUDA numbers them fastest first, NVML by PCI bus; set "
                     "CUDA_DEVICE_ORDER=PCI_BUS_ID so both agree")
    return gpus, notes


def _cpu_model() -> str:
    keys = ("model name", "hardware", "processor", "cpu model", "cpu")  # x86, then ARM/POWER spellings
    found: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                key = key.strip().lower()
                if sep and key in keys and value.strip() and key not in found:
                    found[key] = value.strip()
                    if key == "model name":
                        break
    except OSError:
        pass
    for key in keys:
        value = found.get(key, "")
        if value and not value.isdigit():  # "processor : 0" is an index on x86, not a model
            return value
    return platform.processor() or platform.machine() or "unknown CPU"


def _cpu_counts(notes: list[str]) -> tuple[int, int]:
    threads = os.cpu_count() or 1
    cores = None
    try:
        import psutil  # noqa: PLC0415

        threads = psutil.cpu_count(logical=True) or threads
        cores = psutil.cpu_count(logical=False)
    except Exception as err:
        notes.append(f"CPU cores could not be read ({err})")
    try:
        usable = len(os.sched_getaffinity(0))
        if usable < threads:
            notes.append(f"this process may use {usable} of the {threads} CPU threads (CPU affinity / cpuset)")
    except (AttributeError, OSError):
        pass
    return int(cores or threads), int(threads)


def _shm(notes: list[str]) -> tuple[int, int]:
    try:
        st = os.statvfs("/dev/shm")
        return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    except OSError as err:
        notes.append(f"/dev/shm could not be read ({err})")
        return 0, 0


def _in_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    if os.environ.get("container") or os.environ.get("KUBERNETES_SERVICE_HOST"):
        return True
    try:
        with open("/proc/1/cgroup", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return False
    return any(word in text for word in ("docker", "kubepods", "containerd", "libpod", "lxc"))


def detect(probe_disks: bool = True) -> Hardware:
    """This machine, read now. Never raises; see the module docstring."""
    notes: list[str] = []
    hw = Hardware(source="detected")
    session = NvmlSession()
    try:
        if session.ok:
            hw.driver_version, hw.cuda_driver_version = session.driver_versions()
            hw.gpus, gpu_notes = gpus_from_nvml(session)
            notes += gpu_notes
            if not hw.gpus:
                hw.nvml_error = session.error or next(
                    (n for n in gpu_notes if "CUDA_VISIBLE_DEVICES" in n), "NVML reports no GPU")
        else:
            hw.nvml_error = session.error
    except Exception as err:  # a driver bug in a query we did not guard must not stop the wizard
        hw.nvml_error = f"NVML failed while reading GPUs: {err}"
    finally:
        session.close()

    hw.cpu_model = _cpu_model()
    hw.cpu_cores, hw.cpu_threads = _cpu_counts(notes)
    mem, mem_notes = read_host_memory()
    notes += mem_notes
    hw.ram_total_bytes, hw.ram_available_bytes, hw.ram_host_bytes = mem.total, mem.available, mem.host_total
    hw.cgroup_memory_limit_bytes = mem.cgroup_limit
    hw.swap_total_bytes, hw.swap_free_bytes = mem.swap_total, mem.swap_free
    hw.shm_total_bytes, hw.shm_free_bytes = _shm(notes)
    # A cgroup limit alone is not a container (Slurm and systemd set them on bare metal); it is reported
    # on its own through cgroup_memory_limit_bytes.
    hw.in_container = _in_container()
    if probe_disks:
        try:
            hw.disks, disk_notes = list_disks()
            notes += disk_notes
        except Exception as err:  # an odd /proc or /sys layout: no disks rather than no wizard
            notes.append(f"disks could not be listed ({err})")
    hw.notes = notes
    return hw


Size = Union[int, str, None]


def stated_hardware(gpu_mem: Size = None, gpus: Optional[int] = None, ram: Size = None, nvme_free: Size = None,
                    bf16: Optional[bool] = None, base: Optional[Hardware] = None) -> Hardware:
    """``base`` (or an empty machine) with what the user stated put in place of what was detected.

    Sizes take ``parse_size`` text ("24GiB") or bytes. Stated GPUs copy the detected GPU's model when
    there is one; otherwise they are assumed bf16-capable (compute capability 8.0) unless ``bf16=False``:
    the cards people plan 24-80 GB fine-tunes on today are Ampere or newer, and a V100 user says so.
    """
    hw = copy.deepcopy(base) if base is not None else Hardware(cpu_model="", source="stated")
    stated: list[str] = []
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
        raise PlanError(f"--gpus: {gpus!r} is not a number of GPUs", "give 0 or more, e.g. --gpus 8")
    mem = parse_size(gpu_mem, "--gpu-mem") if gpu_mem is not None else None
    if mem is not None and mem <= 0:
        raise PlanError("--gpu-mem: a GPU needs some memory", "e.g. --gpu-mem 24GiB")
    count = gpus if gpus is not None else (len(hw.gpus) or (1 if mem is not None or bf16 is not None else 0))
    if gpus is not None or mem is not None or bf16 is not None:
        template = hw.gpus[0] if hw.gpus else GpuInfo(index=0, name="stated GPU", total_bytes=0, free_bytes=0,
                                                      compute_capability=(8, 0), bf16=True)
        if count > 0 and (mem or template.total_bytes) <= 0:
            raise PlanError("--gpu-mem is needed: no GPU was detected to take its memory from",
                            "say how much each GPU has, e.g. --gpu-mem 24GiB")
        if mem is not None and mem != template.total_bytes:
            template = replace(template, name=f"stated GPU ({format_bytes(mem)})", total_bytes=mem, free_bytes=mem,
                               uuid="", error="")
        if bf16 is not None:
            template = replace(template, bf16=bool(bf16),
                               compute_capability=template.compute_capability if bool(bf16) == template.bf16
                               else ((8, 0) if bf16 else (7, 0)))
        # Only the count stated: detected GPUs stay as they are, extra ones copy the first. Memory or bf16
        # stated: every GPU becomes the stated model (data parallelism plans for identical GPUs anyway).
        keep = mem is None and bf16 is None
        hw.gpus = [replace(hw.gpus[i] if keep and i < len(hw.gpus) else template, index=i) for i in range(count)]
        if count:
            hw.nvml_error = ""
        stated.append(f"{count} GPU(s) of {format_bytes(hw.gpu_total_bytes)}" if count else "no GPU")
    if ram is not None:
        ram_bytes = parse_size(ram, "--ram")
        if ram_bytes <= 0:
            raise PlanError("--ram: the machine needs some RAM", "e.g. --ram 64GiB")
        hw.ram_total_bytes = hw.ram_available_bytes = hw.ram_host_bytes = ram_bytes
        hw.cgroup_memory_limit_bytes = None
        stated.append(f"RAM {format_bytes(ram_bytes)}")
    if nvme_free is not None:
        free = parse_size(nvme_free, "--nvme-free")
        if hw.nvme_disks:
            disk = hw.nvme_disks[0]
            disk.free_bytes, disk.total_bytes = free, max(disk.total_bytes, free)
        else:
            hw.disks.append(DiskInfo(device="stated", mountpoint="(stated)", fstype="stated", total_bytes=free,
                                     free_bytes=free, nvme=True, rotational=False))
        stated.append(f"NVMe free {format_bytes(free)}")
    if stated:
        hw.source = "stated"
        hw.notes = [*hw.notes, "stated by the user: " + ", ".join(stated)]
    return hw
