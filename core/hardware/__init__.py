"""What the machine has: GPUs through NVML, CPU, RAM/swap/cgroup limits, disks and NVMe, /dev/shm
(``detect``), as plain data (``types``); the worker's telemetry sampler; and the after-run check that
GPU memory was freed; and whether the Hugging Face hub can be reached from here (``hub``: a quick
connect, so offline machines use the cache at once).

May import: the base modules only (never a Plan: planning reads ``types``, never NVML or psutil).
"""
