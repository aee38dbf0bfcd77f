"""A stand-in for the ``pynvml`` module (nvidia-ml-py), for tests on machines without NVIDIA GPUs.

It fakes NVML at its boundary only: the same function names, return shapes (memory info objects,
(major, minor) tuples, milliwatts) and exception type as the real module, so the code under test runs
unchanged. Install it with ``monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(...))``.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Optional

GiB = 1 << 30


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801 - the real module's spelling
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801
    pass


@dataclass
class FakeGpu:
    name: str = "NVIDIA A100-SXM4-80GB"
    total: int = 80 * GiB
    used: int = 1 * GiB
    cc: tuple[int, int] = (8, 0)
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    pcie: tuple[int, int] = (4, 16)
    power_limit_mw: int = 400_000
    util: int = 37
    power_mw: int = 123_456
    temp: int = 55
    fail: dict[str, Exception] = field(default_factory=dict)  # function name -> error it raises


H100 = dict(name="NVIDIA H100 80GB HBM3", total=80 * GiB, cc=(9, 0), power_limit_mw=700_000)
A100 = dict(name="NVIDIA A100-SXM4-80GB", total=80 * GiB, cc=(8, 0))
V100 = dict(name="Tesla V100-SXM2-32GB", total=32 * GiB, cc=(7, 0), pcie=(3, 16), power_limit_mw=300_000)


class FakeNvml(types.ModuleType):
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, gpus: Optional[list[FakeGpu]] = None, init_error: Optional[Exception] = None,
                 driver: str = "550.54.15", cuda: int = 12040) -> None:
        super().__init__("pynvml")
        self.gpus = gpus or []
        self.init_error = init_error
        self.driver, self.cuda = driver, cuda
        self.inits = self.shutdowns = 0
        self.calls = 0
        self.NVMLError = NVMLError
        self.NVMLError_LibraryNotFound = NVMLError_LibraryNotFound

    # -- helpers -------------------------------------------------------------------------------------
    def _gpu(self, handle: Any, fn: str) -> FakeGpu:
        self.calls += 1
        if self.inits <= self.shutdowns:
            raise NVMLError("Uninitialized")
        gpu = self.gpus[handle]
        if fn in gpu.fail:
            raise gpu.fail[fn]
        return gpu

    # -- the pynvml API used by zerotui ----------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        if not 0 <= i < len(self.gpus):
            raise NVMLError("Invalid Argument")
        return i  # the real handle is an opaque pointer; an index is enough to find the fake

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._gpu(h, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._gpu(h, "nvmlDeviceGetUUID").uuid

    def nvmlDeviceGetMemoryInfo(self, h: int) -> types.SimpleNamespace:
        g = self._gpu(h, "nvmlDeviceGetMemoryInfo")
        return types.SimpleNamespace(total=g.total, used=g.used, free=g.total - g.used)

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return self._gpu(h, "nvmlDeviceGetCudaComputeCapability").cc

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetMaxPcieLinkGeneration").pcie[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetMaxPcieLinkWidth").pcie[1]

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw

    def nvmlDeviceGetUtilizationRates(self, h: int) -> types.SimpleNamespace:
        return types.SimpleNamespace(gpu=self._gpu(h, "nvmlDeviceGetUtilizationRates").util, memory=0)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._gpu(h, "nvmlDeviceGetPowerUsage").power_mw

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        assert sensor == self.NVML_TEMPERATURE_GPU
        return self._gpu(h, "nvmlDeviceGetTemperature").temp


def fake(*specs: dict, **kwargs: Any) -> FakeNvml:
    """``fake(H100, H100)``: a module with those GPUs, each given a distinct UUID."""
    gpus = []
    for i, spec in enumerate(specs):
        spec = dict(spec)
        spec.setdefault("uuid", f"GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}")
        gpus.append(FakeGpu(**spec))
    return FakeNvml(gpus, **kwargs)
