"""The GPU's used memory sampled every 0.1 s from the benchmark's own process, while a run goes on.

zerotui's telemetry reads NVML every ``ZEROTUI_TELEMETRY_S`` (2 s here), and a run's last moments can fall
between two readings: the NCCL communicator DeepSpeed's ``save_checkpoint`` opens at the final save
(core/estimate/cuda_context.py) lives from that save to the process's exit, and a LoRA adapter's save and
exit can take less than 2 s (7b-lora-fit, seed-scenarios-expandable-c: NVML read one communicator where the
run made two). This process has no CUDA context of its own (models are built in a child), so on a GPU
that runs nothing else NVML's used memory is the run's.
"""
from __future__ import annotations

import threading
from typing import Optional


class NvmlPeak:
    """``with NvmlPeak(index) as p: ...`` then ``p.peak``: the largest used bytes seen (None without NVML)."""

    def __init__(self, index: int = 0, every_s: float = 0.1) -> None:
        self.index, self.every_s = index, every_s
        self.peak: Optional[int] = None
        self.error: Optional[str] = None  # an NVML error that stopped the sampling
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "NvmlPeak":
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
        except Exception:  # noqa: BLE001 - no NVML, no GPU (the CPU dry run): nothing to sample
            return self

        def sample() -> None:
            while True:
                try:
                    used = pynvml.nvmlDeviceGetMemoryInfo(handle).used
                except Exception as err:  # noqa: BLE001 - stop sampling; the row says so
                    self.error = str(err)
                    return
                self.peak = used if self.peak is None else max(self.peak, used)
                if self._stop.wait(self.every_s):
                    return

        self._thread = threading.Thread(target=sample, name="nvml-peak", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            try:
                import pynvml

                pynvml.nvmlShutdown()
            except Exception:  # noqa: BLE001 - nothing to release
                pass
