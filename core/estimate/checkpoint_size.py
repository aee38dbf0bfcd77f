"""Bytes one checkpoint writes to the runs folder's disk, all ranks together.

DeepSpeed's ``save_checkpoint`` writes the module's state (its 16-bit weights; at stage 3 the module holds
only partitions' placeholders and writes next to nothing) and each rank's optimizer state: the fp32 master
partition and Adam's two moments, 12 bytes a trainable element. Stages 1-2 keep their fp32 master apart
from the module even in fp32 (4 more bytes); stage 0 in fp32 has no master but the weights. Adapters save
only themselves (zerotui saves with ``exclude_frozen_parameters``). zerotui keeps ``keep_checkpoints``
complete checkpoints and removes the oldest only after a new one is complete, so the disk holds one more
at that moment. The counts are checked against real DeepSpeed checkpoints on the CPU
(tests/deepspeed/test_checkpoint_size.py: the tiny model in bf16 at stages 0, 1 and 3 and in fp32 at
stages 0 and 2 within 0.4%, LoRA within 7%, its few files' framing). Unchecked before this: a 7B full fine-tune trained on an H200,
then failed writing its first checkpoint (75 GiB by this count) to a disk with 51 GiB free
(benchmarks/results/seed-scenarios-full7bl-h200-2026-12-05.json).
"""
from __future__ import annotations

from typing import Any


def checkpoint_bytes(plan: Any, spec: Any) -> int:
    """Bytes of one complete checkpoint of ``plan`` on ``spec``'s model."""
    from zerotui.core.estimate.job import job_for
    from zerotui.core.hardware.types import Hardware

    job = job_for(plan, spec, Hardware(), env={})
    trainable = float(job.psit)
    weights = 0.0 if job.stage == 3 else job.p * (trainable if plan.uses_adapters() else job.psi)
    master = 0.0 if (job.stage == 0 and job.p == 4) else 4 * trainable
    return int(weights + master + 8 * trainable)


def checkpoint_disk_bytes(plan: Any, spec: Any) -> int:
    """The most the runs folder's disk holds of the run's checkpoints: ``keep_checkpoints`` of them, and
    the next one while it is written (one, when the run saves only at its end)."""
    saves_often = bool(plan.save_interval or plan.save_minutes)
    return checkpoint_bytes(plan, spec) * ((plan.keep_checkpoints + 1) if saves_often else 1)
