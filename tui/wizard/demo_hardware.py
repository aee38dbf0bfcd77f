"""Fixed machines for screenshots and UI tests: the same numbers every time, nothing read from the host.

``workstation_24gb`` is the issue-5 scenario (one 24 GB GPU, 64 GB RAM, one NVMe drive); ``cpu_only`` is
a laptop-like box with no GPU (the tiny CPU demo). They are plain ``Hardware`` values with
``source="fake"`` so the hardware screen says they were not detected.
"""
from __future__ import annotations

from zerotui.core.hardware.types import DiskInfo, GpuInfo, Hardware

GIB = 1 << 30


def workstation_24gb() -> Hardware:
    return Hardware(
        gpus=[GpuInfo(index=0, name="NVIDIA GeForce RTX 4090", total_bytes=24 * GIB, free_bytes=24 * GIB,
                      compute_capability=(8, 9), bf16=True)],
        cpu_model="AMD Ryzen 9 7950X 16-Core Processor", cpu_cores=16, cpu_threads=32,
        ram_total_bytes=64 * GIB, ram_available_bytes=60 * GIB, ram_host_bytes=64 * GIB,
        swap_total_bytes=8 * GIB, swap_free_bytes=8 * GIB, shm_total_bytes=32 * GIB, shm_free_bytes=32 * GIB,
        disks=[DiskInfo(device="/dev/nvme0n1p2", mountpoint="/", fstype="ext4", total_bytes=2000 * 10**9,
                        free_bytes=1200 * 10**9, nvme=True, rotational=False)],
        driver_version="550.54.14", cuda_driver_version="12.4", source="fake")


def cpu_only() -> Hardware:
    return Hardware(
        gpus=[], cpu_model="Intel(R) Xeon(R) CPU @ 2.20GHz", cpu_cores=2, cpu_threads=2,
        ram_total_bytes=24 * GIB, ram_available_bytes=20 * GIB, ram_host_bytes=24 * GIB,
        swap_total_bytes=0, shm_total_bytes=12 * GIB, shm_free_bytes=12 * GIB,
        disks=[DiskInfo(device="/dev/sda1", mountpoint="/", fstype="ext4", total_bytes=100 * 10**9,
                        free_bytes=60 * 10**9, nvme=False, rotational=False)],
        nvml_error="NVML library not found (no NVIDIA driver)", source="fake")
