"""Where a sweep's trials run at the same time: ``--parallel N`` gives N slots, one trial in each.

On a machine with GPUs a slot is one GPU: the trial is a single-GPU run whose plan names that GPU
(``gpu_ids: [i]``), so the run launcher starts it through DeepSpeed's launcher, which sets
CUDA_VISIBLE_DEVICES to that GPU alone (core/run/launcher.py) and a later `zerotui resume` of the trial
lands on the same GPU. The GPUs are the plan's ``gpu_ids`` if it names some, else 0..count-1. Without
GPUs a slot is one CPU process (how CI tests it). Only the first N of those GPUs are used: a trial's GPU is
then known from its slot alone. ``--parallel 1`` (the default) leaves the plan as it is.
"""
from __future__ import annotations

from dataclasses import dataclass

from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan

MAX_PARALLEL = 64


@dataclass(frozen=True)
class Slot:
    index: int
    gpu: int | None = None  # None: a CPU process, or (with --parallel 1) whatever the plan asks for

    @property
    def label(self) -> str:
        return f"gpu {self.gpu}" if self.gpu is not None else f"slot {self.index}"


def plan_slots(plan: Plan, parallel: int, gpu_count: int) -> list[Slot]:
    """The slots for ``parallel`` trials at once of ``plan`` on a machine with ``gpu_count`` GPUs;
    PlanError naming what is wrong (and what would work) when the plan or the machine cannot do it."""
    if not 1 <= parallel <= MAX_PARALLEL:
        raise PlanError(f"--parallel {parallel}: give 1 to {MAX_PARALLEL}", "e.g. --parallel 2 (one trial per GPU)")
    if parallel == 1:
        return [Slot(0)]
    if plan.nodes > 1:
        raise PlanError(f"--parallel {parallel} runs single-GPU trials side by side; the plan asks for {plan.nodes} nodes",
                        "use --nodes 1, or --parallel 1 for multi-node trials", "nodes")
    if plan.gpu_ids is None and plan.gpus not in (None, 1):
        raise PlanError(f"--parallel {parallel} runs one single-GPU trial per GPU; the plan asks for --gpus {plan.gpus}",
                        "drop --gpus (or give --gpu-ids to choose the GPUs), or use --parallel 1", "gpus")
    if gpu_count == 0:
        if plan.gpu_ids is not None:
            raise PlanError(f"--gpu-ids {_ids(plan.gpu_ids)}: no GPU was detected on this machine",
                            f"drop --gpu-ids: here --parallel {parallel} runs {parallel} CPU trials at once", "gpu_ids")
        return [Slot(i) for i in range(parallel)]
    pool = list(plan.gpu_ids) if plan.gpu_ids is not None else list(range(gpu_count))
    missing = [i for i in pool if i >= gpu_count]
    if missing:
        raise PlanError(f"--gpu-ids {_ids(pool)}: this machine has GPU(s) 0-{gpu_count - 1}, not {_ids(missing)}",
                        f"choose indices below {gpu_count} (`zerotui doctor` lists the GPUs)", "gpu_ids")
    if parallel > len(pool):
        seen = f"the plan's --gpu-ids {_ids(pool)}" if plan.gpu_ids is not None else f"this machine's {gpu_count} GPU(s)"
        raise PlanError(f"--parallel {parallel}: one trial runs per GPU and there are only {seen}",
                        f"use --parallel {len(pool)} or fewer", "parallel")
    return [Slot(i, gpu) for i, gpu in enumerate(pool[:parallel])]


def pin(plan: Plan, slot: Slot, parallel: int) -> Plan:
    """The trial's plan for ``slot``: one process on its GPU (or on the CPU); unchanged for --parallel 1."""
    if parallel == 1:
        return plan
    if slot.gpu is None:
        return plan.with_changes(gpus=1, gpu_ids=None)
    return plan.with_changes(gpus=1, gpu_ids=[slot.gpu])


def detected_gpus() -> int:
    """GPUs NVML sees here (0 without a driver): the machine the driver runs on, checked on every start
    because a sweep may be resumed on another one."""
    from zerotui.core.hardware.detect import detect

    return detect(probe_disks=False).gpu_count


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)
