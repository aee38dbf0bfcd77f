"""The worker's telemetry: one ``sample()`` every few seconds becomes a ``telemetry`` event.

It runs on the worker's main thread beside a training loop that must not notice it, so a sample is cheap
(well under 5 ms without GPUs, measured in tests/unit/test_telemetry.py) and never raises:

* NVML is opened once and its handles kept; a GPU query that fails gives null for that field only.
* CPU % is psutil's non-blocking form (interval=None): the load since the previous sample.
* RSS is summed over the worker's process tree (the DeepSpeed launcher's ranks are its children). Finding
  children scans all of /proc, so the list is refreshed every ``children_refresh_s`` only: ranks start
  once. RSS counts shared pages (torch's libraries, pinned buffers) once per process, so the sum is an
  upper bound; PSS would be exact but reads every smaps file (tens of ms per rank). ``rss_file``, the
  part of RSS that maps regular files, does read smaps, so each process's is kept for 30 s unless its
  RSS moves by 256 MiB.
* A child whose command line is its parent's is left out: a fork that has not yet exec'd. Every
  ``subprocess`` call the worker makes (py-cpuinfo's probes when CPU Adam starts, DeepSpeed's compiler
  checks) is such a copy for a moment, and its RSS is the parent's own pages: a 0.13B NVMe run on the
  CPU read 7.96 GiB once where the worker held 4.7 (2026-12-05). A rank started by the launcher has a
  command line of its own, and a compiler has its own after exec, so both still count.
* ``nvme_bytes`` (space used under the plan's ``nvme_path``) walks a folder of swap files; a background
  thread refreshes it every ``nvme_refresh_s`` and ``sample()`` returns the last value.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Optional

from zerotui.core.hardware.disks import allocated_bytes
from zerotui.core.hardware.hostmem import read_cgroup_memory
from zerotui.core.hardware.nvml import NvmlSession, VisibleGpu

#: How far a process's RSS moves before its file pages are read again early (see ``_file_pages``).
FILE_PAGES_STEP = 256 << 20




class TelemetrySampler:
    """``sample()`` returns the fields of a ``telemetry`` event (see core/events/stream.py).

    ``gpu_indices``: CUDA ordinals to watch (after CUDA_VISIBLE_DEVICES), None for all visible GPUs.
    ``root_pid``: the process whose tree is summed for ``rss`` (default: this process; a rank-0 worker
    under the DeepSpeed launcher passes the launcher's pid to count every rank).
    """

    def __init__(self, gpu_indices: Optional[list[int]] = None, nvme_path: Optional[str] = None,
                 root_pid: Optional[int] = None, children_refresh_s: float = 10.0,
                 nvme_refresh_s: float = 30.0, file_pages_refresh_s: float = 30.0) -> None:
        self._nvml = NvmlSession()
        self._gpus: list[VisibleGpu] = []
        try:
            visible = self._nvml.visible() if self._nvml.ok else []
            wanted = None if gpu_indices is None else set(gpu_indices)
            self._gpus = [g for g in visible if wanted is None or g.index in wanted]
        except Exception:
            self._gpus = []  # NVML broke while listing: sample CPU and RAM only
        self._temp_sensor = getattr(self._nvml.nvml, "NVML_TEMPERATURE_GPU", 0) if self._nvml.ok else 0
        self._psutil: Any = None
        self._procs: list[Any] = []
        self._children_at = 0.0
        self._children_refresh_s = children_refresh_s
        self._root_pid = root_pid or os.getpid()
        self._file_cache: dict[int, tuple[float, int, Optional[int]]] = {}
        self._file_pages_refresh_s = file_pages_refresh_s
        try:
            import psutil  # noqa: PLC0415

            self._psutil = psutil
            psutil.cpu_percent(interval=None)  # the first call only sets the baseline
        except Exception:
            self._psutil = None
        self._nvme_path = str(nvme_path) if nvme_path else None
        self._nvme_bytes: Optional[int] = None
        self._nvme_at = -1e18
        self._nvme_refresh_s = nvme_refresh_s
        self._nvme_thread: Optional[threading.Thread] = None

    @property
    def gpu_count(self) -> int:
        return len(self._gpus)

    # -- parts -------------------------------------------------------------------------------------
    def _gpu(self, g: VisibleGpu) -> dict[str, Any]:
        call = self._nvml.call
        util, _ = call("nvmlDeviceGetUtilizationRates", g.handle)
        mem, _ = call("nvmlDeviceGetMemoryInfo", g.handle)
        power, _ = call("nvmlDeviceGetPowerUsage", g.handle)
        temp, _ = call("nvmlDeviceGetTemperature", g.handle, self._temp_sensor)
        return {
            "index": g.index,
            "util": float(util.gpu) if util is not None else None,
            "mem_used": int(mem.used) if mem is not None else None,
            "mem_total": int(mem.total) if mem is not None else None,
            "power_w": power / 1000.0 if power is not None else None,  # NVML reports milliwatts
            "temp_c": float(temp) if temp is not None else None,
        }

    def _ram(self) -> tuple[Optional[int], Optional[int]]:
        try:
            vm = self._psutil.virtual_memory()
            total, used = int(vm.total), int(vm.total - vm.available)
        except Exception:
            return None, None
        try:
            # Inside a container the cgroup limit is what the OOM killer enforces (see hostmem.py).
            cg = read_cgroup_memory()
        except Exception:
            cg = None
        if cg is not None and cg.limit is not None and cg.limit < total:
            total = cg.limit
            used = cg.working_set if cg.working_set is not None else used
        return used, total

    def _rss(self) -> tuple[Optional[int], Optional[int]]:
        ps = self._psutil
        now = time.monotonic()
        try:
            if not self._procs or now - self._children_at >= self._children_refresh_s:
                root = ps.Process(self._root_pid)
                self._procs = [root, *root.children(recursive=True)]
                self._children_at = now
        except Exception:
            return None, None  # the root is gone: nothing to report
        seen, alive = [], []
        for p in self._procs:
            try:
                mem = p.memory_info()
                # Resident pages of mapped files (the model's safetensors while loading, libraries, files
                # in /dev/shm): the kernel can drop them, so they are told apart from what the run holds.
                # Not Linux's "shared", which also counts CUDA's pinned buffers (core/hardware/file_pages.py).
                seen.append((p.pid, p.ppid(), p.cmdline(), mem.rss, self._file_pages(p.pid, mem.rss, now)))
                alive.append(p)
            except Exception:
                continue  # a rank that exited since the last refresh
        self._procs = alive
        pids = {p.pid for p in alive}
        self._file_cache = {pid: v for pid, v in self._file_cache.items() if pid in pids}
        lines = {pid: line for pid, _, line, _, _ in seen}
        # A forked child with its parent's command line (a data loader, a compile job's fork) shares its
        # parent's pages: counted once, with the parent.
        counted = [(rss, shared) for pid, ppid, line, rss, shared in seen
                   if pid == self._root_pid or lines.get(ppid) != line]
        if not alive:
            return None, None
        shared = [sh for _, sh in counted]
        return sum(rss for rss, _ in counted), (sum(shared) if None not in shared else None)

    def _file_pages(self, pid: int, rss: int, now: float) -> Optional[int]:
        """``file_backed_rss(pid)``, read again only when ``file_pages_refresh_s`` have passed or RSS has
        moved by FILE_PAGES_STEP since: a read walks the process's mappings (6-12 ms on the CPU), too much
        for every sample on the training loop's thread, and file pages move with loading and saving,
        which move RSS too."""
        from zerotui.core.hardware.file_pages import file_backed_rss

        last = self._file_cache.get(pid)
        if last is None or now - last[0] >= self._file_pages_refresh_s or abs(rss - last[1]) >= FILE_PAGES_STEP:
            last = (now, rss, file_backed_rss(pid))
            self._file_cache[pid] = last
        return last[2]

    def _nvme(self) -> Optional[int]:
        if self._nvme_path is None:
            return None
        now = time.monotonic()
        busy = self._nvme_thread is not None and self._nvme_thread.is_alive()
        if not busy and now - self._nvme_at >= self._nvme_refresh_s:
            self._nvme_at = now
            path = self._nvme_path

            def refresh() -> None:
                self._nvme_bytes = allocated_bytes(path) if os.path.isdir(path) else 0

            self._nvme_thread = threading.Thread(target=refresh, daemon=True, name="zerotui-nvme-du")
            self._nvme_thread.start()
        return self._nvme_bytes

    # -- API ---------------------------------------------------------------------------------------
    def sample(self) -> dict[str, Any]:
        gpus = []
        for g in self._gpus:
            try:
                gpus.append(self._gpu(g))
            except Exception:
                gpus.append({"index": g.index, "util": None, "mem_used": None, "mem_total": None,
                             "power_w": None, "temp_c": None})
        cpu = ram_used = ram_total = rss = rss_file = None
        if self._psutil is not None:
            try:
                cpu = float(self._psutil.cpu_percent(interval=None))
            except Exception:
                cpu = None
            ram_used, ram_total = self._ram()
            rss, rss_file = self._rss()
        try:
            nvme = self._nvme()
        except Exception:
            nvme = None
        return {"gpus": gpus, "cpu_percent": cpu, "ram_used": ram_used, "ram_total": ram_total,
                "rss": rss, "rss_file": rss_file, "nvme_bytes": nvme}

    def close(self) -> None:
        self._nvml.close()
        self._gpus = []

    def __enter__(self) -> "TelemetrySampler":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
