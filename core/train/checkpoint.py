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

import errno
import hashlib
import json
import os
import random
import re
import shutil
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.atomic import atomic_write_json, atomic_write_text
from zerotui.core.errors import RunError
from zerotui.core.sizes import format_bytes

MARKER = "zerotui_complete.json"
TAG_RE = re.compile(r"^step(\d+)$")
CLIENT_KEY = "zerotui"
_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@dataclass(frozen=True)
class CheckpointInfo:
    tag: str
    step: int
    path: Path
    complete: bool


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
            "tensorboard", "csv_log", "wandb", "stall_minutes", "runs_dir", "max_nonfinite", "eval_interval",
            "eval_batches", "save_final"}
    data = {k: v for k, v in plan.to_dict().items() if k not in skip}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


# -- RNG ------------------------------------------------------------------------------------------

def rng_state() -> dict[str, Any]:
    import numpy as np
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC and friends, also when torch's zip writer wraps them ('file write failed')."""
    return _write_error(exc) is not None


def _write_error(exc: BaseException) -> Optional[str]:
    """Why writing failed, in words, when ``exc`` (or what it wraps) is a failed write; else None.

    torch's zip writer turns a short write into a RuntimeError from inline_container.cc ('file write
    failed', or 'unexpected pos' when part of a block got through), losing the errno.
    """
    seen: set[int] = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in _DISK_ERRNOS:
            return {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
                    errno.EFBIG: "a file grew past the size limit"}[e.errno]
        text = str(e)
        if "No space left" in text:
            return "the disk is full"
        if "file write failed" in text or "inline_container" in text or "File too large" in text:
            return "a write failed"
        e = e.__cause__ or e.__context__
    return None


class Checkpointer:
    """Saves and loads one run's checkpoints. Every rank calls ``save`` / ``load`` (DeepSpeed's saves are
    collective); only rank 0 writes the marker and ``latest``, emits, and prunes."""

    def __init__(self, engine: Any, folder: Path, plan: Any, rank: int, emit: Callable[..., Any],
                 barrier: Callable[[], None], exclude_frozen: bool) -> None:
        self.engine = engine
        self.folder = folder
        self.plan = plan
        self.rank = rank
        self.emit = emit
        self.barrier = barrier
        # LoRA: the frozen base is the model the run started from; saving it every time would cost the
        # whole model's size on disk per checkpoint (140 GB for a 70B model) for nothing.
        self.exclude_frozen = exclude_frozen
        self.last_saved_step: Optional[int] = None

    def save(self, step: int, client: dict[str, Any], why: str) -> CheckpointInfo:
        tag = tag_for(step)
        path = self.folder / tag
        started = time.monotonic()
        try:
            if self.rank == 0:
                self.folder.mkdir(parents=True, exist_ok=True)
                if path.exists():  # a torn attempt at this step (an earlier worker died writing it)
                    shutil.rmtree(path)
            self.barrier()
            self.engine.save_checkpoint(str(self.folder), tag=tag, client_state={CLIENT_KEY: client},
                                        save_latest=False, exclude_frozen_parameters=self.exclude_frozen)
            import torch

            torch.save(rng_state(), path / f"zerotui_rng_rank{self.rank}.pt")
            self.barrier()
            if self.rank == 0:
                _fsync_tree(path)
                atomic_write_json(path / MARKER, {"step": step, "tag": tag, "time": time.time(), "why": why,
                                                  "plan_hash": client.get("plan_hash")})
                atomic_write_text(self.folder / "latest", tag)
        except Exception as exc:
            why = _write_error(exc)
            if why is not None:
                _release_files(exc)
                raise self._write_failed(path, step, why) from None
            raise
        seconds = time.monotonic() - started
        self.last_saved_step = step
        info = CheckpointInfo(tag, step, path, True)
        if self.rank == 0:
            size = _tree_size(path)
            self.emit("checkpoint", step=step, path=str(path), tag=tag, why=why,
                      seconds=round(seconds, 2), bytes=size)
            self.prune()
        return info

    def _write_failed(self, path: Path, step: int, why: str) -> RunError:
        previous = newest_complete(self.folder)
        if self.rank == 0:
            shutil.rmtree(path, ignore_errors=True)  # frees what was written; the marker never was
        try:
            free = shutil.disk_usage(self.folder).free
            free_s = f"{format_bytes(free)} free"  # '3.2 MiB free', not '0.0 GiB free'
            # torch's writer loses the errno; less room than one checkpoint needs says what happened.
            if why == "a write failed" and previous is not None and free < _tree_size(previous.path):
                why = "the disk is full"
        except OSError:
            free_s = "free space unknown"
        kept = f"checkpoint {previous.tag} is intact" if previous else "no earlier checkpoint exists"
        message = (f"checkpoint at step {step} could not be written under {self.folder}: {why} ({free_s}); "
                   f"{kept}")
        hint = "free space (or lower --keep-checkpoints), then `zerotui resume` continues from the last checkpoint"
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
        load_path, client = self.engine.load_checkpoint(
            str(self.folder), tag=info.tag, load_module_strict=not self.exclude_frozen,
            load_optimizer_states=True, load_lr_scheduler_states=True)
        if load_path is None or not isinstance(client, dict) or CLIENT_KEY not in client:
            raise RunError(f"checkpoint {info.path} could not be loaded (DeepSpeed found no state in it)",
                           "remove that folder to resume from the one before it")
        rng_file = info.path / f"zerotui_rng_rank{self.rank}.pt"
        if rng_file.exists():
            import torch

            set_rng_state(torch.load(rng_file, weights_only=False))
        self.last_saved_step = info.step
        return client[CLIENT_KEY]

    def remove_newer_torn(self, step: int) -> None:
        """After choosing a checkpoint, torn tags beyond it are garbage from the worker that died."""
        if self.rank != 0:
            return
        for c in list_checkpoints(self.folder):
            if not c.complete and c.step > step:
                shutil.rmtree(c.path, ignore_errors=True)


def _release_files(exc: BaseException) -> None:
    """Close the files a failed save still holds open. torch's zip writer is only closed when its frames
    go, and the exception's traceback keeps them alive (the worker keeps the exception to report it):
    on a full disk the removed torn files would keep their space, and the worker's next small writes
    (status.json) failed with ENOSPC too (found by scripts/faults/disk_full.py on a 48 MiB tmpfs)."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)  # skips frames still running (this one's callers)
        todo += [e.__cause__, e.__context__]


def _fsync_tree(path: Path) -> None:
    """Flush the checkpoint's files before the marker says they are there (power loss, not just kill)."""
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)


def _tree_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total
