"""The plan's GPU memory cap, applied to this rank's CUDA allocator.

``torch.cuda.set_per_process_memory_fraction`` bounds what PyTorch's caching allocator may hold; the CUDA
context (kernels, cuBLAS workspaces, NCCL) lives outside it. The budget counts that context as part of a
GPU's memory, so the allocator gets the cap less the context the estimator assumes
(``estimate.calibration.CUDA_CONTEXT_BYTES``): a run that the budget says fits in 24 GiB then has what the
budget gave it, on a 24 GiB card or capped on a bigger one. Going past it raises torch's ordinary
out-of-memory error, reported like any other.
"""
from __future__ import annotations

from typing import Any, Optional

from zerotui.core.errors import HardwareError
from zerotui.core.sizes import format_bytes


def apply_gpu_mem_cap(plan: Any, context_bytes: int) -> Optional[float]:
    """Limit this process's allocator on its current GPU; returns the fraction set (None: no cap, or no
    GPU). Raises HardwareError for a cap that leaves nothing after the CUDA context."""
    cap = plan.gpu_mem_cap
    if not cap:
        return None
    import torch

    if not torch.cuda.is_available():
        return None
    device = torch.cuda.current_device()
    total = torch.cuda.get_device_properties(device).total_memory
    usable = min(cap, total) - context_bytes
    if usable <= 0:
        raise HardwareError(f"gpu_mem_cap {format_bytes(cap)} leaves nothing for training after the CUDA "
                            f"context (~{format_bytes(context_bytes)})",
                            f"give --gpu-mem-cap more than {format_bytes(context_bytes)}")
    fraction = usable / total
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    return fraction
