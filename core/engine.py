"""The DeepSpeed training run: ``train(plan, paths, emit, control, hardware=None, resume=False)``.

Runs in the worker's training thread (``core/worker.py``); no UI, no signals. It prepares everything in
an order that fails fast: the data (seconds, and the most common mistake) before the model (minutes on
a large one), then DeepSpeed. Each stage is announced as a ``phase`` event, then ``run_started``, and
the loop itself (``core/loop.py``) emits ``step`` / ``eval`` / ``checkpoint`` / ``alert`` events.

Only rank 0 emits. Several ranks are started by the DeepSpeed launcher; one process (CPU or one GPU)
runs without it, and then this module sets the rendezvous environment itself.
"""
from __future__ import annotations

import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from .atomic import atomic_write_json
from .opbuild import clear_stale_build_locks, put_interpreter_bin_on_path

#: Minimum seconds between two progress events of one phase (tokenising a million rows).
PHASE_EVERY_S = 0.5


@dataclass
class RunResult:
    state: str          # completed | stopped | failed
    reason: str
    step: int


def init_distributed() -> tuple[int, int]:
    """(rank, world size), initialising torch.distributed through DeepSpeed when nothing has yet."""
    import torch.distributed as dist

    if not dist.is_initialized():
        # DeepSpeed compiles its ops on first use: ninja on PATH, no lock left by a killed build
        # (core/opbuild.py).
        put_interpreter_bin_on_path()
        for lock in clear_stale_build_locks():
            print(f"zerotui: removed {lock}, left by an op build that was killed", file=sys.stderr)
        from .launcher import collective_timeout, single_process_env

        single_process_env()
        import deepspeed
        from deepspeed.accelerator import get_accelerator

        # DeepSpeed's CPU accelerator would pick oneCCL when installed; gloo is what is tested here.
        backend = "gloo" if get_accelerator().device_name() == "cpu" else None
        # The timeout is passed, not left to DeepSpeed's import-time default, so that the value the
        # launcher's environment holds is the one in force (see launcher.DEFAULT_TIMEOUT_MINUTES).
        deepspeed.init_distributed(dist_backend=backend, timeout=collective_timeout())
        _default_timeout_for_new_groups(collective_timeout())
        if backend == "gloo":
            _release_shm_name()
    return dist.get_rank(), dist.get_world_size()


def _release_shm_name() -> None:
    """Unlink this rank's shared-memory buffer name once every rank has mapped every buffer.

    DeepSpeed's CPU collectives (csrc/cpu/comm/shm.cpp) create /dev/shm/deepspeed_allreduce_buffer_<uid>_
    <addr>_<port>_<rank>, ~69 MB each, map all ranks' buffers during init and never unlink them: each run
    left 69 MB of RAM per rank in /dev/shm until reboot (3.2 GB here after a day of tests). The mappings
    stay valid after the unlink and the memory is freed when the last rank exits, also after a kill -9."""
    import torch.distributed as dist

    dist.barrier()  # every rank has returned from shm_initialize, which maps all buffers
    name = (f"deepspeed_allreduce_buffer_{os.getuid()}_{os.environ.get('MASTER_ADDR', '')}_"
            f"{os.environ.get('MASTER_PORT', '')}_{dist.get_rank()}")
    try:
        os.unlink(os.path.join("/dev/shm", name))
    except OSError:
        pass  # not created (another backend, an older DeepSpeed) or already gone


def _default_timeout_for_new_groups(timeout: Any) -> None:
    """Make ``timeout`` the default of every process group created from now on.

    ZeRO's gradient and parameter collectives do not run on the default group but on DeepSpeed's clone
    of it (deepspeed/utils/groups.py, ``_clone_world_group``: ``new_group(ranks)`` without a timeout),
    which torch gives its own default — 30 min for gloo, 10 for NCCL — whatever DEEPSPEED_TIMEOUT says.
    Seen here: with DEEPSPEED_TIMEOUT=1 a stopped rank 1 left rank 0 waiting in a ZeRO-2 collective for
    more than 5 minutes (tests/test_multiprocess.py, the hung-rank test). torch reads these two module
    globals in ``_get_default_timeout`` when a group is made without one."""
    from torch.distributed import distributed_c10d as c10d

    for name in ("default_pg_timeout", "default_pg_nccl_timeout"):
        if isinstance(getattr(c10d, name, None), type(timeout)):
            setattr(c10d, name, timeout)


def rank0_work_group(world: int) -> Any:
    """A gloo group with a long timeout for barriers where the other ranks wait for rank 0's own work
    (tokenising, finishing a checkpoint); None with one process. Every rank must call this, in order."""
    if world == 1:
        return None
    import torch.distributed as dist

    from .launcher import RANK0_WORK_TIMEOUT

    return dist.new_group(backend="gloo", timeout=RANK0_WORK_TIMEOUT)


class _Phases:
    """phase events with throttled progress (done / total)."""

    def __init__(self, emit: Callable[..., Any]) -> None:
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


@dataclass
class _SpecLike:
    """What ``build_ds_config`` reads from a ModelSpec, taken from the loaded config."""

    hidden_size: int
    largest_param_numel: int


def _spec_from_config(cfg: Any) -> _SpecLike:
    h = int(getattr(cfg, "hidden_size", 0) or 0)
    v = int(getattr(cfg, "vocab_size", 0) or 0)
    i = int(getattr(cfg, "intermediate_size", 0) or 0)
    return _SpecLike(h, max(h * v, h * i, h * h))


def ds_config_for(plan: Any, paths: Any, world: int, model_config: Any, rank: int,
                  note: Callable[[str], None]) -> dict:
    """The ds_config: the run folder's ds_config.json when the launcher wrote one (what the user saw and
    can export), else built from the plan. Adjusted for this run (world size, monitor folders inside the
    run) and written back atomically, so ds_config.json stays what DeepSpeed actually got."""
    from .dsconfig import build_ds_config

    spec = _spec_from_config(model_config)
    if paths.ds_config.exists():
        cfg = json.loads(paths.ds_config.read_text(encoding="utf-8"))
        changed = False
    else:
        cfg = build_ds_config(plan, world, spec, run_dir=paths.root)
        changed = True
    batch = plan.micro_batch * plan.grad_accum * world
    if cfg.get("train_batch_size") != batch:
        note(f"train_batch_size {cfg.get('train_batch_size')} → {batch} for {world} process(es)")
        cfg["train_batch_size"] = batch
        changed = True
    for key in ("tensorboard", "csv_monitor"):
        block = cfg.get(key)
        if isinstance(block, dict) and block.get("enabled"):
            out = Path(str(block.get("output_path") or key))
            if not out.is_absolute():  # relative to the run folder, not to wherever the worker started
                block["output_path"] = str(paths.root / out)
                changed = True
    if changed and rank == 0:
        atomic_write_json(paths.ds_config, cfg)
    return cfg


def total_steps_for(plan: Any, batches_per_epoch: int) -> int:
    if plan.max_steps:
        return int(plan.max_steps)
    return max(1, math.floor(plan.epochs * batches_per_epoch / plan.grad_accum))


def _hardware_dict(hardware: Any, paths: Any) -> Optional[dict]:
    if hardware is not None:
        return hardware.to_dict() if hasattr(hardware, "to_dict") else dict(hardware)
    try:
        return json.loads(paths.hardware.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def train(plan: Any, paths: Any, emit: Callable[..., Any], control: Any, hardware: Any = None,
          resume: bool = False) -> RunResult:
    """Train ``plan`` in run folder ``paths``; see the module docstring and docs/interfaces.md."""
    import numpy as np
    import torch

    rank, world = init_distributed()
    _check_precision(plan)  # before minutes of loading, not deep inside deepspeed.initialize
    if rank != 0 and not getattr(emit, "all_ranks", False):
        emit = _silent  # only rank 0 writes events (the worker's emit drops other ranks' events itself)
    phases = _Phases(emit)

    def note(message: str) -> None:
        emit("log", message=message)

    random.seed(plan.seed)
    np.random.seed(plan.seed % 2**32)
    torch.manual_seed(plan.seed)

    # -- data first: seconds, and the most common mistake --------------------------------------
    from .data import prepare_data
    from .modelload import load_config, load_model, load_tokenizer

    phases.start("loading tokenizer")
    tokenizer = load_tokenizer(plan)
    phases.start("tokenising")
    long_group = rank0_work_group(world)
    data = _rank0_first(world, rank, lambda: prepare_data(plan, tokenizer, progress=phases.progress), long_group)
    note(data.report.summary())
    problems = data.report.problems()
    if problems:
        emit("alert", kind="data", message=problems,
             hint="fix or remove those rows; training goes on with the rest")

    from .sampler import DataOrder

    order = DataOrder(len(data.train), plan.micro_batch, world, rank, plan.seed)
    total = total_steps_for(plan, order.batches_per_epoch)

    # -- model and DeepSpeed ----------------------------------------------------------------------
    phases.start("loading model")
    model_config = load_config(plan)
    ds_config = ds_config_for(plan, paths, world, model_config, rank, note)
    loaded = load_model(plan, ds_config, tokenizer, model_config, note=note)

    phases.start("initialising DeepSpeed")
    import deepspeed

    from .schedule import build_scheduler

    params = [p for p in loaded.model.parameters() if p.requires_grad]
    engine, _opt, _, _ = deepspeed.initialize(
        model=loaded.model, model_parameters=params, config=ds_config,
        lr_scheduler=lambda opt: build_scheduler(opt, plan, total))

    from .checkpoint import Checkpointer, newest_complete
    from .loop import TrainLoop

    def barrier() -> None:
        if world > 1:
            torch.distributed.barrier()

    ckpt = Checkpointer(engine, paths.checkpoints, plan, rank, emit, barrier, exclude_frozen=loaded.is_lora)
    loop = TrainLoop(plan=plan, engine=engine, loaded=loaded, data=data, order=order, total=total,
                     rank=rank, world=world, emit=emit, control=control, ckpt=ckpt, paths=paths,
                     rank0_wait=(lambda: torch.distributed.barrier(group=long_group)) if long_group else None)
    resumed_from = None
    if resume:
        info = newest_complete(paths.checkpoints)
        if info is None:
            note("no complete checkpoint to resume from: starting at step 0")
        else:
            phases.start("loading checkpoint")
            loop.restore(ckpt.load(info))
            ckpt.remove_newer_torn(info.step)
            resumed_from = info.tag

    emit("run_started", plan=plan.to_dict(), hardware=_hardware_dict(hardware, paths), world_size=world,
         total_steps=total, start_step=loop.step, resumed_from=resumed_from,
         params_total=loaded.params_total, params_trainable=loaded.params_trainable,
         steps_per_epoch=max(1, order.batches_per_epoch // plan.grad_accum),
         train_sequences=len(data.train), eval_sequences=len(data.eval) if data.eval is not None else 0,
         data_format=data.report.format)
    return loop.run()


def _rank0_first(world: int, rank: int, fn: Callable[[], Any], group: Any = None) -> Any:
    """Rank 0 runs ``fn`` (tokenising: it fills the cache), the other ranks then (a cache hit), so a
    node does the work once. Rank 0 reaches the barrier even when ``fn`` fails, or the others would
    wait forever; they then fail the same way on their own. ``group``: where to wait (a long-timeout
    group: tokenising a large corpus can outlast the collective timeout)."""
    if world == 1:
        return fn()
    import torch.distributed as dist

    if rank == 0:
        try:
            return fn()
        finally:
            dist.barrier(group=group)
    dist.barrier(group=group)
    return fn()


def _check_precision(plan: Any) -> None:
    """DeepSpeed raises a bare ValueError deep inside initialize for a dtype the device lacks."""
    from deepspeed.accelerator import get_accelerator

    from .errors import HardwareError

    acc = get_accelerator()
    ok = {"fp16": acc.is_fp16_supported, "bf16": acc.is_bf16_supported}.get(plan.precision)
    if ok is not None and not ok():
        other = "bf16" if plan.precision == "fp16" and acc.is_bf16_supported() else "fp32"
        raise HardwareError(f"{plan.precision} training is not supported on this {acc.device_name()} device",
                            f"use --precision {other}")


def _silent(*_args: Any, **_kwargs: Any) -> None:
    return None

