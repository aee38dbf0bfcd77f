"""DeepSpeed checkpoints that are announced only when complete, and resume from the newest complete one.

Layout under ``RUN/checkpoints/``::

    step120/                     one DeepSpeed tag (its own files: model states, ZeRO partitions)
      zerotui_rng_rank0.pt       each rank's RNG states (python, numpy, torch, cuda)
      zerotui_complete.json      written last, by rank 0, after every rank finished: the completion marker
    latest                       DeepSpeed's pointer, rewritten atomically after the marker

A checkpoint without the marker (the process was killed mid-write, the disk filled) is torn: resume
skips it and the next save of that tag replaces it. zerotui's own position (step, data position,
elapsed time, plan hash) travels in DeepSpeed's ``client_state``.
"""
from __future__ import annotations

import hashlib
import json
import pickle
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.atomic import atomic_write_json, atomic_write_text
from zerotui.core.train.checkpoint_files import (damaged_file, fsync_tree, load_rng_file, release_files, rng_state, set_rng_state, touch,
                                                 tree_size, whole_recovery_scripts, write_error)
from zerotui.core.train.background_save import PinnedPool, RecordEngine, SnapshotEngine, WriteJob, Writer, write_file
from zerotui.core.errors import RunError
from zerotui.core.sizes import format_bytes
from zerotui.core.train.checkpoint_shape import checkpoint_shape

MARKER = "zerotui_complete.json"
#: The folder a dry run of a save (``Checkpointer.prepare``) makes and removes; never a step tag.
DRY_RUN_TAG = "zerotui-dry-run"
TAG_RE = re.compile(r"^step(\d+)$")
CLIENT_KEY = "zerotui"


#: How long rank 0's writer waits for the other ranks' files (a rank that died is the supervisor's business).
RANKS_WRITTEN_TIMEOUT_S = 3600.0


@dataclass
class _Pending:
    step: int
    tag: str
    path: Path
    why: str
    plan_hash: Optional[str]
    started: float
    stall: float                 # seconds training waited
    job: Optional[WriteJob]      # None: written in the foreground


@dataclass(frozen=True)
class CheckpointInfo:
    tag: str
    step: int
    path: Path
    complete: bool


class DamagedCheckpoint(RunError):
    """A checkpoint marked complete whose files no longer read (cut short by a copy or a failing disk)."""

    def __init__(self, info: CheckpointInfo, detail: str, hint: str) -> None:
        super().__init__(f"checkpoint {info.tag} is damaged: {detail}", hint)
        self.info, self.detail = info, detail


def tag_for(step: int) -> str:
    return f"step{step}"


def list_checkpoints(folder: Path) -> list[CheckpointInfo]:
    """Every tag folder under ``folder``, oldest step first, complete or not."""
    out = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return []
    for p in entries:
        m = TAG_RE.match(p.name)
        if m and p.is_dir():
            out.append(CheckpointInfo(p.name, int(m.group(1)), p, (p / MARKER).is_file()))
    return sorted(out, key=lambda c: c.step)


def newest_complete(folder: Path) -> Optional[CheckpointInfo]:
    done = [c for c in list_checkpoints(folder) if c.complete]
    return done[-1] if done else None


def plan_hash(plan: Any) -> str:
    """Hash of the plan fields that define the training trajectory (not logging or output options)."""
    skip = {"name", "description", "log_interval", "save_interval", "save_minutes", "keep_checkpoints",
            "save_background", "tensorboard", "csv_log", "wandb", "stall_minutes", "runs_dir", "max_nonfinite", "eval_interval",
            "eval_batches", "save_final"}
    data = {k: v for k, v in plan.to_dict().items() if k not in skip}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


class Checkpointer:
    """Saves and loads one run's checkpoints. Every rank calls ``save`` / ``load`` (DeepSpeed's saves are
    collective); only rank 0 writes the marker and ``latest``, emits, and prunes."""

    def __init__(self, engine: Any, folder: Path, plan: Any, rank: int, emit: Callable[..., Any],
                 barrier: Callable[[], None], exclude_frozen: bool, world: int = 1) -> None:
        self.engine = engine
        if callable(getattr(engine, "_copy_recovery_script", None)):  # no 0-byte zero_to_fp32.py on a full disk
            engine._copy_recovery_script = whole_recovery_scripts(engine._copy_recovery_script)
        self.folder = folder
        self.plan = plan
        self.rank = rank
        self.emit = emit
        self.barrier = barrier
        # LoRA: the frozen base is the model the run started from; saving it every time would cost the
        # whole model's size on disk per checkpoint (140 GB for a 70B model) for nothing.
        self.exclude_frozen = exclude_frozen
        self.world = world
        self.last_saved_step: Optional[int] = None
        self.pending: Optional[_Pending] = None
        self.writer = Writer()
        self.pool: Optional[PinnedPool] = None
        self.warming: Optional[WriteJob] = None   # the pool's first buffers, pinned by the writer thread

    def save(self, step: int, client: dict[str, Any], why: str, background: bool = False) -> None:
        """Save step ``step`` (collective). ``background``: training resumes once the state is copied to
        host memory, and the files are written by a thread (``background_save.py``); ``poll`` reports the
        result at a later step boundary. Otherwise this returns once the checkpoint is complete."""
        if self.warming is not None:  # its buffers are this save's: never take them while they are made
            self.started()
            self.warming.done.wait()
            self.warming = None
        self.wait()  # one checkpoint in flight: a second snapshot would double the host memory
        if step == self.last_saved_step:
            return
        tag = tag_for(step)
        path = self.folder / tag
        started = time.monotonic()
        job = WriteJob() if background else None
        try:
            if self.rank == 0:
                self.folder.mkdir(parents=True, exist_ok=True)
                if path.exists():  # a torn attempt at this step (an earlier worker died writing it)
                    shutil.rmtree(path)
            self.barrier()
            snap = SnapshotEngine(job, self._pool()) if job is not None else None
            own = self.engine.checkpoint_engine
            if snap is not None:
                self.engine.checkpoint_engine = snap
            try:
                self.engine.save_checkpoint(str(self.folder), tag=tag, client_state={CLIENT_KEY: client},
                                            save_latest=False, exclude_frozen_parameters=self.exclude_frozen)
                rng = path / f"zerotui_rng_rank{self.rank}.pt"
                if snap is not None:
                    snap.save(rng_state(), str(rng))
                else:
                    write_file(rng_state(), str(rng))
            finally:
                self.engine.checkpoint_engine = own
            self.barrier()
        except Exception as exc:
            why_failed = write_error(exc)
            if why_failed is not None:
                release_files(exc)
                raise self._write_failed(path, step, why_failed) from None
            raise
        stall = time.monotonic() - started
        pending = _Pending(step, tag, path, why, client.get("plan_hash"), started, stall, job)
        if job is None:
            if self.rank == 0:
                self._mark(pending)
            self._completed(pending)
            return
        job.finish = lambda error: self._finish_in_background(pending, error)
        self.pending = pending
        self.writer.start(job)

    def prepare(self) -> None:
        """Before training (collective): a dry run of a save names the GPU tensors a checkpoint copies, and
        the writer thread pins a buffer for each while training starts, so the first background save is
        as quick as the later ones (without it, it copied into fresh memory: 10.6 s instead of 0.3 s for
        the 1.1B job's 15 GB, benchmarks/results/speed-ckpt-*.json). Best effort: on any failure the first
        save copies into ordinary memory, as it would without this."""
        pool = self._pool()
        plan = self.plan
        if pool is None or not plan.save_background or not (plan.save_interval or plan.save_minutes) \
                or plan.offload_optimizer == "nvme":  # an NVMe save copies the swap folder: not for a dry run
            return
        own = self.engine.checkpoint_engine
        try:
            if self.rank == 0:
                self.folder.mkdir(parents=True, exist_ok=True)
            self.barrier()
            self.engine.checkpoint_engine = RecordEngine(pool)
            self.engine.save_checkpoint(str(self.folder), tag=DRY_RUN_TAG, client_state={}, save_latest=False,
                                        exclude_frozen_parameters=self.exclude_frozen)
        except Exception:  # noqa: BLE001 - see the docstring
            pool.wanted = []
        finally:
            self.engine.checkpoint_engine = own
            if self.rank == 0:
                shutil.rmtree(self.folder / DRY_RUN_TAG, ignore_errors=True)
        if pool.wanted:
            # Pinning waits for the first step: while it runs, it held up that step's own allocations
            # (the first 5 steps took 15 s longer with it running at once, measured).
            self.warming = WriteJob(pool=pool, gate=threading.Event())
            self.writer.start(self.warming)

    def started(self) -> None:
        """Training is under way: the writer thread may pin the pool's buffers now."""
        if self.warming is not None and self.warming.gate is not None:
            self.warming.gate.set()

    def _pool(self) -> Optional[PinnedPool]:
        import torch

        if self.pool is None and self.plan.pin_memory and torch.cuda.is_available():
            self.pool = PinnedPool()
        return self.pool

    # -- completion ---------------------------------------------------------------------------------
    def _mark(self, p: "_Pending") -> None:
        """Rank 0, once every rank's files are durable: the marker, then DeepSpeed's ``latest``."""
        fsync_tree(p.path)
        atomic_write_json(p.path / MARKER, {"step": p.step, "tag": p.tag, "time": time.time(), "why": p.why,
                                            "plan_hash": p.plan_hash, "shape": checkpoint_shape(self.plan)})
        atomic_write_text(self.folder / "latest", p.tag)

    def _finish_in_background(self, p: "_Pending", error: Optional[BaseException]) -> None:
        """On the writer thread after this rank's files: say so to rank 0 (a file, since collectives
        belong to the training thread), and on rank 0 wait for every rank, then mark."""
        if error is not None:
            if self.rank != 0:
                touch(p.path / f"zerotui_rank{self.rank}.failed", repr(error)[:500])
            return
        if self.rank != 0:
            touch(p.path / f"zerotui_rank{self.rank}.written", "")
            return
        deadline = time.monotonic() + RANKS_WRITTEN_TIMEOUT_S
        for r in range(1, self.world):
            while not (p.path / f"zerotui_rank{r}.written").exists():
                if (p.path / f"zerotui_rank{r}.failed").exists():
                    raise RuntimeError(f"rank {r} could not write its part of the checkpoint")
                if time.monotonic() > deadline or not p.path.is_dir():
                    raise RuntimeError(f"rank {r} did not finish writing its part of the checkpoint")
                time.sleep(0.2)
        self._mark(p)

    def poll(self) -> None:
        """At a step boundary: report a background save that has ended (raises RunError if it failed)."""
        p = self.pending
        if p is None or p.job is None or not p.job.done.is_set():
            return
        self.pending = None
        if p.job.error is not None:
            exc = p.job.error
            why = write_error(exc) or f"the background write failed ({type(exc).__name__}: {str(exc)[:200]})"
            release_files(exc)
            raise self._write_failed(p.path, p.step, why)
        self._completed(p)

    def wait(self) -> None:
        """Block until a background save in flight has ended, and report it (graceful stop, run end)."""
        p = self.pending
        if p is not None and p.job is not None:
            p.job.done.wait()
        self.poll()

    def drain(self) -> None:
        """At the worker's end, whatever the reason: let a background write finish; a failure is an alert
        (the run is ending anyway, and the exception that ended it must not be masked)."""
        try:
            self.wait()
        except RunError:
            pass  # _write_failed already emitted the alert and removed the torn folder

    def _completed(self, p: "_Pending") -> None:
        self.last_saved_step = p.step
        if self.rank != 0:
            return
        fields: dict[str, Any] = {"step": p.step, "path": str(p.path), "tag": p.tag, "why": p.why,
                                  "seconds": round(p.stall, 2), "bytes": tree_size(p.path)}
        if p.job is not None:  # training stopped for `seconds`; the files took `write_seconds` in all
            fields["write_seconds"] = round(time.monotonic() - p.started, 2)
            fields["background"] = p.job.foreground_files == 0
        self.emit("checkpoint", **fields)
        self.prune()

    def _write_failed(self, path: Path, step: int, why: str) -> RunError:
        previous = newest_complete(self.folder)
        if self.rank == 0:
            shutil.rmtree(path, ignore_errors=True)  # frees what was written; the marker never was
        try:
            free = shutil.disk_usage(self.folder).free
            free_s = f"{format_bytes(free)} free"  # '3.2 MiB free', not '0.0 GiB free'
            # torch's writer loses the errno; less room than one checkpoint needs says what happened.
            if why == "a write failed" and previous is not None and free < tree_size(previous.path):
                why = "the disk is full"
        except OSError:
            free_s = "free space unknown"
        kept = f"checkpoint {previous.tag} is intact" if previous else "no earlier checkpoint exists"
        message = (f"checkpoint at step {step} could not be written under {self.folder}: {why} ({free_s}); "
                   f"{kept}")
        # resume takes no plan options: keep_checkpoints is lowered in the run's plan.yaml, and only above 1
        fewer = (f" (or lower keep_checkpoints from {self.plan.keep_checkpoints} in the run's plan.yaml)"
                 if getattr(self.plan, "keep_checkpoints", 1) > 1 else "")
        hint = f"free space{fewer}, then `zerotui resume` continues from the last checkpoint"
        if self.rank == 0:
            self.emit("alert", kind="disk", message=message, hint=hint)
        return RunError(message, hint)

    def prune(self) -> None:
        """Keep the newest ``keep_checkpoints`` complete checkpoints; drop older ones and torn leftovers."""
        all_ = list_checkpoints(self.folder)
        complete = [c for c in all_ if c.complete]
        if not complete:
            return
        keep = {c.tag for c in complete[-self.plan.keep_checkpoints:]}
        newest = complete[-1].step
        for c in all_:
            if c.tag in keep or (not c.complete and c.step > newest):
                continue
            shutil.rmtree(c.path, ignore_errors=True)

    def load(self, info: CheckpointInfo) -> dict[str, Any]:
        """Restore engine, optimizer and scheduler state from ``info``; returns zerotui's client state."""
        from zerotui.core.train.mmap_load import mapped_loads
        from zerotui.core.train.nvme_resume import restore_state

        try:
            with mapped_loads(self.engine):
                load_path, client = self.engine.load_checkpoint(
                    str(self.folder), tag=info.tag, load_module_strict=not self.exclude_frozen,
                    load_optimizer_states=True, load_lr_scheduler_states=True)
        except pickle.UnpicklingError as err:  # weights_only refused a class: nothing of it ran
            first = next((ln.strip() for ln in str(err).splitlines() if "GLOBAL" in ln or "Unsupported" in ln), "")
            raise RunError(f"checkpoint {info.path} holds objects a DeepSpeed checkpoint never holds, refused "
                           f"unread ({first[:160]})", "if you did not put them there, remove that folder to "
                           "resume from the checkpoint before it") from None
        except (AssertionError, KeyError) as err:  # DeepSpeed's load, given files of another stage or model
            raise RunError(f"checkpoint {info.tag} does not load into this run's model and ZeRO stage "
                           f"({type(err).__name__}: {str(err)[:120]})", "it was written before plan.yaml's stage, "
                           "method or model changed: put them back, or start a new run") from None
        except (RuntimeError, OSError, EOFError) as err:
            damaged = damaged_file(info.path)  # torch's "failed finding central directory" names no file
            if damaged is None:
                raise
            older = [c for c in list_checkpoints(self.folder) if c.complete and c.step < info.step]
            instead = f"to resume from {older[-1].tag}" if older else "(the run has no older checkpoint to resume from)"
            raise DamagedCheckpoint(info, f"{damaged} ({str(err).splitlines()[0][:100]})",
                                    f"remove {info.path} {instead}") from None
        if load_path is None or not isinstance(client, dict) or CLIENT_KEY not in client:
            raise RunError(f"checkpoint {info.path} could not be loaded (DeepSpeed found no state in it)",
                           "remove that folder to resume from the one before it")
        said = restore_state(self.engine, self.folder, info.tag)  # NVMe offload: DeepSpeed leaves it out
        if said:
            self.emit("log", message=said)
        rng_file = info.path / f"zerotui_rng_rank{self.rank}.pt"
        state = load_rng_file(rng_file) if rng_file.exists() else None
        if state is not None:
            set_rng_state(state)
        elif rng_file.exists():
            self.emit("log", message=f"{rng_file.name} is not a zerotui RNG file (damaged, or from another "
                                     "version): random states start fresh")
        self.last_saved_step = info.step
        return client[CLIENT_KEY]

    def remove_newer_torn(self, step: int) -> None:
        """After choosing a checkpoint, torn tags beyond it are garbage from the worker that died."""
        if self.rank != 0:
            return
        for c in list_checkpoints(self.folder):
            if not c.complete and c.step > step:
                shutil.rmtree(c.path, ignore_errors=True)


