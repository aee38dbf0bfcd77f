"""NVML (NVIDIA's management library, through ``pynvml`` from nvidia-ml-py): the one place that talks to it.

``hardware.detect()`` reads what the GPUs are; ``telemetry.TelemetrySampler`` reads how busy they are.
Both see the GPUs the way the training process will: through ``CUDA_VISIBLE_DEVICES``, numbered 0..n-1
in that order (the ``cuda:N`` a DeepSpeed rank gets), with the NVML index kept beside it.

Nothing here raises. A missing library, an init failure or a single query failing is recorded as text
and the caller shows it; an NVIDIA driver hiccup must never take down the wizard or a 30-hour run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Optional


def _text(value: Any) -> str:
    # pynvml before 11.5 returned bytes for names, UUIDs and versions.
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def describe_nvml_error(err: BaseException) -> str:
    """One line for a failed nvmlInit, in words a user can act on."""
    kind = type(err).__name__
    msg = str(err).strip() or kind
    if "LibraryNotFound" in kind or "Library Not Found" in msg:
        return "NVML library not found: no NVIDIA driver is installed or visible here"
    if "DriverNotLoaded" in kind or "Driver Not Loaded" in msg:
        return "NVIDIA driver not loaded: is its kernel module loaded, the container started with GPUs?"
    if "NoPermission" in kind or "Insufficient Permissions" in msg:
        return f"no permission to open the NVIDIA devices ({msg}): check /dev/nvidia* access"
    return f"NVML could not start: {msg}"


@dataclass
class VisibleGpu:
    index: int          # CUDA ordinal the training process sees (cuda:index)
    nvml_index: int     # NVML's own (PCI bus order) index
    handle: Any


class NvmlSession:
    """NVML opened once (``nvmlInit``) and closed by ``close()``; ``error`` says why it is unusable."""

    def __init__(self) -> None:
        self.nvml: Any = None
        self.error = ""
        self.notes: list[str] = []
        try:
            import pynvml  # noqa: PLC0415 - imported lazily: tests fake it, CPU machines may lack it
        except ImportError:
            self.error = "nvidia-ml-py is not installed (no pynvml module): GPUs cannot be read"
            return
        try:
            pynvml.nvmlInit()
        except Exception as err:  # NVMLError subclasses, OSError from a broken libnvidia-ml
            self.error = describe_nvml_error(err)
            return
        self.nvml = pynvml

    @property
    def ok(self) -> bool:
        return self.nvml is not None

    def call(self, fn_name: str, *args: Any) -> tuple[Any, str]:
        """``(value, "")`` or ``(None, why)``: one NVML query, never raising."""
        try:
            return getattr(self.nvml, fn_name)(*args), ""
        except Exception as err:  # NVMLError_NotSupported on consumer cards, GPU lost, ...
            return None, f"{fn_name}: {_text(err) or type(err).__name__}"

    def driver_versions(self) -> tuple[str, str]:
        """(driver version, the CUDA version the driver supports, e.g. '12.4')."""
        driver, _ = self.call("nvmlSystemGetDriverVersion")
        cuda, _ = self.call("nvmlSystemGetCudaDriverVersion")
        cuda_text = ""
        if isinstance(cuda, int) and cuda > 0:
            # NVML encodes it as 1000 * major + 10 * minor (nvml.h, nvmlSystemGetCudaDriverVersion).
            cuda_text = f"{cuda // 1000}.{(cuda % 1000) // 10}"
        return (_text(driver) if driver is not None else ""), cuda_text

    def visible(self, env: Optional[str] = None) -> list[VisibleGpu]:
        """The GPUs CUDA would show this process, in CUDA order; ``notes`` gets why any were skipped."""
        if not self.ok:
            return []
        count, why = self.call("nvmlDeviceGetCount")
        if count is None:
            self.error = f"NVML could not count GPUs ({why})"
            return []
        handles: dict[int, Any] = {}
        for i in range(int(count)):
            handle, why = self.call("nvmlDeviceGetHandleByIndex", i)
            if handle is None:
                self.notes.append(f"NVML GPU {i} cannot be opened ({why})")
            else:
                handles[i] = handle
        if env is None:
            env = os.environ.get("CUDA_VISIBLE_DEVICES")
        order = resolve_visible_devices(env, int(count), lambda i: self._uuid(handles.get(i)), self.notes)
        return [VisibleGpu(n, i, handles[i]) for n, i in enumerate(order) if i in handles]

    def _uuid(self, handle: Any) -> str:
        if handle is None:
            return ""
        uuid, _ = self.call("nvmlDeviceGetUUID", handle)
        return _text(uuid) if uuid is not None else ""

    def close(self) -> None:
        if self.ok:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass  # shutting down a library that already failed: nothing left to do
            self.nvml = None


def resolve_visible_devices(env: Optional[str], count: int, uuid_of: Callable[[int], str],
                            notes: list[str]) -> list[int]:
    """NVML indices named by ``CUDA_VISIBLE_DEVICES``, in its order, following CUDA's rules.

    CUDA accepts indices and ``GPU-<uuid>`` (a unique prefix is enough) and stops at the first entry that
    matches no device, ignoring the rest; an empty value hides every GPU (CUDA C Programming Guide,
    "CUDA Environment Variables"). Indices here are NVML's (PCI bus order); CUDA's default order is
    FASTEST_FIRST, which is the same order on the identical-GPU machines people train on, and we note
    when it may not be.
    """
    if env is None:
        return list(range(count))
    chosen: list[int] = []
    for raw in env.split(","):
        token = raw.strip()
        index: Optional[int] = None
        if token.isdigit() and int(token) < count:
            index = int(token)
        elif token.upper().startswith("GPU-"):
            matches = [i for i in range(count) if uuid_of(i).upper().startswith(token.upper())]
            index = matches[0] if len(matches) == 1 else None
        elif token.upper().startswith("MIG-"):
            notes.append(f"CUDA_VISIBLE_DEVICES names a MIG instance ({token}); zerotui reads whole GPUs only")
        if index is None or index in chosen:
            if token and not token.upper().startswith("MIG-"):
                notes.append(f"CUDA_VISIBLE_DEVICES={env!r}: {token!r} matches no GPU (CUDA ignores it and "
                             f"every entry after it)")
            break
        chosen.append(index)
    if not chosen:
        notes.append(f"CUDA_VISIBLE_DEVICES={env!r} hides every GPU")
    return chosen
