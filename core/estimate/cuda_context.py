"""What a training process holds on its GPU outside PyTorch's allocator: the CUDA context, library
kernels and workspaces, and NCCL's communicators (calibration.CUDA_CONTEXT_BYTES says what each costs).

The difference between plans is NCCL: each communicator holds its own buffers (+0.38 GiB on the H200),
and a DeepSpeed run on one GPU may open two, one per process group it uses
(benchmarks/results/nccl-communicators-2026-12-03.txt, traced with NCCL_DEBUG=INFO):

- ZeRO's own collectives run on DeepSpeed's clone of the world group (deepspeed/utils/groups.py,
  ``_clone_world_group``): used at stages 0-2 (the model broadcast, the gradient reduction), and at
  stage 3 on one GPU only by fp16's overflow check and by QLoRA; bf16 stage 3 on one GPU never uses it.
- The default group gets a communicator at its first collective: stage 3's set-up barriers
  (stage3.py), and DeepSpeed's ``save_checkpoint``, which calls ``dist.barrier()`` on it. A zerotui run
  saves at least once (the checkpoint at its end) while the allocator still holds its peak: the 13B
  QLoRA run (ZeRO-0) read 21.09 GiB on NVML while training and 21.47 once the save had begun, with the
  second communicator created right after that barrier.

So a zerotui run on one GPU holds two communicators at its peak, except bf16/fp32 at stage 3 without
QLoRA (one, the default group's), which matches every H200 row through zerotui's worker where NVML caught the save
(zerotui's telemetry samples NVML every 2 s and a LoRA adapter's save can fall between samples: the same
1.1B QLoRA plan read one communicator in one run and two in another; sampled every 0.1 s by the
benchmark, three LoRA plans whose first runs read one read two, one of them seen only by that sampler,
seed-scenarios-fine-a/-b-2026-12-03). The estimator's own sweep harness never saves,
and there only the rows that use both groups (fp16 at stage 3) read two. Several GPUs always count two
(NCCL's buffers grow with peers; not measured).
"""
from __future__ import annotations

from typing import Any

from zerotui.core.estimate import calibration as cal


def communicators(plan: Any, ranks: int = 1, saves_checkpoints: bool = True) -> int:
    """NCCL communicators one process holds at its peak (the module docstring). ``saves_checkpoints``:
    False only for a process that never calls DeepSpeed's save_checkpoint (the benchmarks' harness)."""
    zero_group = ranks > 1 or plan.method == "qlora" or plan.stage < 3 or plan.precision == "fp16"
    default_group = ranks > 1 or plan.stage == 3 or saves_checkpoints
    return int(zero_group) + int(default_group)


def second_communicator(plan: Any, ranks: int = 1, saves_checkpoints: bool = True) -> bool:
    """Whether the run holds a second NCCL communicator at its peak."""
    return communicators(plan, ranks, saves_checkpoints) > 1


def context_bytes(plan: Any, ranks: int = 1, saves_checkpoints: bool = True) -> int:
    """Bytes one process of a ``ranks``-process run holds outside the allocator for ``plan``."""
    extra = cal.SECOND_COMMUNICATOR_BYTES if second_communicator(plan, ranks, saves_checkpoints) else 0
    return cal.CUDA_CONTEXT_BYTES + extra
