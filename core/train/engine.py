"""The DeepSpeed training run: ``train(plan, paths, emit, control, hardware=None, resume=False)``.

Runs in the worker's training thread (``zerotui.core.run.worker``); no UI, no signals. It prepares
everything in an order that fails fast: the data (seconds, and the most common mistake) before the model
(minutes on a large one), then DeepSpeed. Each stage is announced as a ``phase`` event, then
``run_started``, and the loop itself (``loop.TrainLoop``) emits ``step`` / ``eval`` / ``checkpoint`` /
``alert`` events.

It reads the run folder and never writes into it beyond checkpoints and ``final/``: ds_config.json and
estimate.json were written by the launch (``zerotui.core.run.start``).
"""
from __future__ import annotations

import math
import random
import time
from typing import Any, Optional

from zerotui.core.errors import HardwareError, RunError
from zerotui.core.safe_read import (
    DS_CONFIG_BYTES,
    RUN_FILE_BYTES,
    ValueProblem,
    describe,
    load_json,
    read_text,
)
from zerotui.core.sizes import format_bytes
from zerotui.core.train.distributed import (
    init_distributed,
    rank0_first,
    rank0_work_group,
)
from zerotui.core.train.emit import Emit
from zerotui.core.train.loop import RunResult
from zerotui.core.train.memory_cap import apply_gpu_mem_cap

#: The CUDA context the allocator cap leaves room for when the run has no recorded budget (2.28 GiB
#: measured on the H200, benchmarks/results/seed-scenarios-c-2026-12-01.json; the estimator's too).
DEFAULT_CONTEXT_BYTES = int(2.28 * 2**30)

#: Minimum seconds between two progress events of one phase (tokenising a million rows).
PHASE_EVERY_S = 0.5


class _Phases:
    """phase events with throttled progress (done / total)."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.last = 0.0

    def start(self, name: str, total: Optional[int] = None) -> None:
        self.name = name
        self.last = time.monotonic()
        self.emit("phase", name=name, done=0 if total else None, total=total)

    def progress(self, done: int, total: Optional[int]) -> None:
        now = time.monotonic()
        if now - self.last >= PHASE_EVERY_S or (total and done >= total):
            self.last = now
            self.emit("phase", name=self.name, done=done, total=total)


def read_ds_config(paths: Any, plan: Any, world: int) -> dict:
    """ds_config.json as the launch wrote it: the worker reads it and never writes it.

    A missing or unreadable file, or one made for another number of processes (DeepSpeed asserts
    train_batch_size = micro-batch × accumulation × world size), is an error that names the file."""
    try:
        # The run folder's own file: bounded, never through a link, never a FIFO that would block the worker.
        cfg = load_json(read_text(paths.ds_config, DS_CONFIG_BYTES, follow=False))
    except FileNotFoundError:
        raise RunError(f"{paths.ds_config} is missing: the launch writes it before the worker starts",
                       "start runs with `zerotui train` (or `zerotui export` for the deepspeed launcher)") from None
    except ValueProblem as err:
        raise RunError(f"{paths.ds_config} cannot be read ({err})",
                       "restore it, or start a new run with `zerotui train`") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise RunError(f"{paths.ds_config}: {describe(err)}",
                       "restore it, or start a new run with `zerotui train`") from None
    if not isinstance(cfg, dict):
        raise RunError(f"{paths.ds_config} is not a JSON object", "restore it, or start a new run")
    want = plan.sequences_per_step(world)
    if cfg.get("train_batch_size") != want:
        raise RunError(f"{paths.ds_config} has train_batch_size {cfg.get('train_batch_size')}, but this run has "
                       f"{world} process(es): micro-batch {plan.micro_batch} × accumulation {plan.grad_accum} × "
                       f"{world} = {want}",
                       "launch it with the number of processes it was made for, or export it again for this one")
    return cfg


def _read_json(path: Any) -> Optional[dict]:
    try:
        data = load_json(read_text(path, RUN_FILE_BYTES, follow=False))
    except (OSError, UnicodeDecodeError, ValueError):  # ValueProblem is a ValueError
        return None
    return data if isinstance(data, dict) else None


def total_steps_for(plan: Any, batches_per_epoch: int) -> int:
    if plan.max_steps:
        return int(plan.max_steps)
    return max(1, math.floor(plan.epochs * batches_per_epoch / plan.grad_accum))


def _build_ops(plan: Any, phases: "_Phases", on_gpu: bool, before_init: bool) -> None:
    """A first use compiles an op: say so, rather than sit in another phase for a minute. The CPU's
    collectives op is loaded by the process group's set-up, so it is built before that; the optimizer's
    before ``deepspeed.initialize``."""
    from zerotui.core.deepspeed.prebuild import COMM_OP, build_missing, ops_for

    names = [op for op in ops_for(plan, on_gpu) if (op == COMM_OP) == before_init]
    try:
        build_missing(names, lambda op: phases.start(f"building DeepSpeed's {op} op (once per machine, about a minute)"))
    except Exception:  # noqa: BLE001 - DeepSpeed meets the same failure where it loads the op and reports it as it always has
        pass


def train(plan: Any, paths: Any, emit: Emit, control: Any, hardware: Any = None,
          resume: bool = False) -> RunResult:
    """Train ``plan`` in run folder ``paths``; see the module docstring and docs/architecture.md ("Python seams").

    ``emit`` is called on every rank (see ``emit.Emit``); ``hardware``: what the launch detected (the
    run folder's hardware.json when None)."""
    import numpy as np
    import torch

    phases = _Phases(emit)
    _build_ops(plan, phases, torch.cuda.is_available(), before_init=True)
    rank, world = init_distributed()
    check_precision(plan)  # before minutes of loading, not deep inside deepspeed.initialize
    budget = _read_json(paths.estimate)
    context = (budget or {}).get("breakdown", {}).get("gpu", {}).get("CUDA context") or DEFAULT_CONTEXT_BYTES
    fraction = apply_gpu_mem_cap(plan, int(context))

    def note(message: str) -> None:
        emit("log", message=message)

    if fraction is not None:
        note(f"GPU memory capped at {format_bytes(plan.gpu_mem_cap)}: the allocator may use {fraction:.1%} of "
             "the card (the rest is left for the CUDA context)")

    random.seed(plan.seed)
    np.random.seed(plan.seed % 2**32)
    torch.manual_seed(plan.seed)

    # -- data first: seconds, and the most common mistake --------------------------------------
    from zerotui.core.data.prepare import prepare_data
    from zerotui.core.model.load import load_config, load_model, load_tokenizer

    phases.start("loading tokenizer")
    tokenizer = load_tokenizer(plan)
    phases.start("tokenising")
    long_group = rank0_work_group(world)
    data = rank0_first(world, rank, lambda: prepare_data(plan, tokenizer, progress=phases.progress), long_group)
    note(data.report.summary())
    if not data.train.packed:
        from zerotui.core.data.padding import packing_hint

        hint = packing_hint(data.train.lengths(), plan.micro_batch, plan.seq_len)
        if hint:
            note(hint)
    problems = data.report.problems()
    if problems:
        emit("alert", kind="data", message=problems,
             hint="fix or remove those rows; training goes on with the rest")

    from zerotui.core.data.sampler import DataOrder

    order = DataOrder(len(data.train), plan.micro_batch, world, rank, plan.seed)
    total = total_steps_for(plan, order.batches_per_epoch)

    # -- model and DeepSpeed ----------------------------------------------------------------------
    phases.start("loading model")
    model_config = load_config(plan)
    from zerotui.core.model.spec import LLAMA_FAMILY

    # causal attention and nothing else reading the mask: padding needs none (core/data/tokenise.py, collate)
    data.causal = getattr(model_config, "model_type", None) in LLAMA_FAMILY
    ds_config = read_ds_config(paths, plan, world)
    if plan.uses_nvme():  # DeepSpeed mlock()s its swap buffers, from zero.Init on (core/deepspeed/memlock.py)
        from zerotui.core.deepspeed.memlock import raise_soft_limit

        raised = raise_soft_limit()
        if raised:
            note(raised)
    loaded = load_model(plan, ds_config, tokenizer, model_config, note=note)

    _build_ops(plan, phases, torch.cuda.is_available(), before_init=False)
    phases.start("initialising DeepSpeed")
    import deepspeed
    from zerotui.core.train.schedule import build_scheduler

    params = [p for p in loaded.model.parameters() if p.requires_grad]
    engine, _opt, _, _ = deepspeed.initialize(
        model=loaded.model, model_parameters=params, config=ds_config,
        lr_scheduler=lambda opt: build_scheduler(opt, plan, total))

    from zerotui.core.train.checkpoint import Checkpointer, newest_complete
    from zerotui.core.train.loop import TrainLoop

    def barrier() -> None:
        if world > 1:
            torch.distributed.barrier()

    ckpt = Checkpointer(engine, paths.checkpoints, plan, rank, emit, barrier, exclude_frozen=loaded.is_lora,
                        world=world)
    loop = TrainLoop(plan=plan, engine=engine, loaded=loaded, data=data, order=order, total=total,
                     rank=rank, world=world, emit=emit, control=control, ckpt=ckpt, paths=paths,
                     rank0_wait=(lambda: torch.distributed.barrier(group=long_group)) if long_group else None)
    resumed_from = None
    if resume:
        from zerotui.core.train.resume_from import load_newest

        if newest_complete(paths.checkpoints) is not None:
            phases.start("loading checkpoint")
        info, client = load_newest(ckpt, paths.checkpoints, world, emit)
        if info is None:
            note("no complete checkpoint to resume from: starting at step 0")
        else:
            loop.restore(client)
            ckpt.remove_newer_torn(info.step)
            resumed_from = info.tag
    # Adam's moments now, beside the other model states, rather than in the first step's freed
    # activations (optimizer_state.py); a resume has just loaded them, and then this makes nothing.
    from zerotui.core.train.optimizer_state import make_optimizer_states

    phases.start("making the optimizer's state")  # an out-of-memory here is named by this phase
    made = make_optimizer_states(engine.optimizer)
    if made:
        note(f"optimizer state made before the first step: {format_bytes(made)}")
    # fp16 ZeRO-3: the overflow check by reductions, not 3 bytes a gradient element (overflow_check.py)
    from zerotui.core.train.overflow_check import lean_overflow_check

    lean_overflow_check(engine.optimizer)

    hardware_dict = hardware.to_dict() if hardware is not None else _read_json(paths.hardware)
    emit("run_started", plan=plan.to_dict(), hardware=hardware_dict, world_size=world,
         total_steps=total, start_step=loop.step, resumed_from=resumed_from,
         params_total=loaded.params_total, params_trainable=loaded.params_trainable,
         steps_per_epoch=max(1, order.batches_per_epoch // plan.grad_accum),
         train_sequences=len(data.train), eval_sequences=len(data.eval) if data.eval is not None else 0,
         data_format=data.report.format, estimate=_read_json(paths.estimate))
    try:
        ckpt.prepare()  # pinned buffers for background saves, made while training starts
        return loop.run()
    finally:
        ckpt.drain()  # a checkpoint still being written in the background is finished, not torn


def check_precision(plan: Any, acc: Any = None) -> None:
    """DeepSpeed raises a bare ValueError deep inside initialize for a dtype the device lacks: refuse it
    before minutes of loading. ``acc``: DeepSpeed's accelerator (this machine's when None). Whether a CPU
    has fp16 depends on its instructions (AVX-512 FP16 / AMX), so it differs between machines."""
    if acc is None:
        from deepspeed.accelerator import get_accelerator

        acc = get_accelerator()
    ok = {"fp16": acc.is_fp16_supported, "bf16": acc.is_bf16_supported}.get(plan.precision)
    if ok is not None and not ok():
        other = "bf16" if plan.precision == "fp16" and acc.is_bf16_supported() else "fp32"
        raise HardwareError(f"{plan.precision} training is not supported on this {acc.device_name()} device",
                            f"use --precision {other}")
