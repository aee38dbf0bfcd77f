"""What the machine has: GPUs through NVML, CPU, RAM/swap/cgroup limits, disks and NVMe, /dev/shm
(``detect``), as plain data (``types``); the worker's telemetry sampler; and the after-run check that
GPU memory was freed.

May import: the base modules only (never a Plan: planning reads ``types``, never NVML or psutil).
"""
