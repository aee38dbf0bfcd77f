"""What the worker's main thread watches while the training thread works.

``RunTracker`` learns the loop's position (phase, step, loss, tokens/s) from the events the engine emits,
so the heartbeat and the alerts never have to ask the training thread anything. ``StallWatch`` and
``RamWatch`` turn readings into ``alert`` events, each once per episode. ``describe_failure`` turns an
exception from the loop into the one-line reason of ``run_finished``, with the memory estimate and a
plan that fits when the loop ran out of memory.

Nothing here touches the training thread's objects: it only reads plain attributes written under the GIL.
"""
from __future__ import annotations

import sys
import threading
import time
import traceback
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Optional

GIB = 1024 ** 3

#: Host RAM above this share of total raises an alert; below REARM it may raise again. CPU-offload runs
#: die to the kernel's OOM killer with no message: 90% leaves time to act; the 5-point gap
#: keeps a reading that hovers at 90% from alerting every few seconds.
RAM_ALERT_FRACTION = 0.90
RAM_REARM_FRACTION = 0.85


class RunTracker:
    """The loop's last known position, updated from its own events (called from the training thread)."""

    def __init__(self, now: Optional[float] = None) -> None:
        self.phase = "starting"
        self.phase_done: Any = None
        self.phase_total: Any = None
        self.step: Optional[int] = None
        self.total_steps: Optional[int] = None
        self.epoch: Any = None
        self.loss: Any = None
        self.tokens_per_s: Any = None
        self.last_checkpoint_step: Optional[int] = None
        self.ram_fraction: Optional[float] = None
        self.training = False  # run_started seen: later phases (saving a checkpoint) are part of training
        # Monotonic time of the last sign of progress (a step, a phase, a checkpoint, an unpause).
        self.last_progress = time.monotonic() if now is None else now

    def observe(self, type_: str, fields: dict[str, Any]) -> None:
        if type_ == "step":
            self.step = fields.get("step", self.step)
            self.epoch = fields.get("epoch", self.epoch)
            self.loss = fields.get("loss", self.loss)
            self.tokens_per_s = fields.get("tokens_per_s", self.tokens_per_s)
            self.phase, self.phase_done, self.phase_total = "training", None, None
            self.training = True
        elif type_ == "phase":
            self.phase = str(fields.get("name") or "?")
            self.phase_done, self.phase_total = fields.get("done"), fields.get("total")
        elif type_ == "run_started":
            self.total_steps = fields.get("total_steps", self.total_steps)
            start = fields.get("start_step", fields.get("resumed_from"))
            if isinstance(start, int) and self.step is None:
                self.step = start
            if fields.get("resumed_from") is not None and isinstance(start, int):
                self.last_checkpoint_step = start  # the checkpoint it resumed from is still there
            self.phase = "training"
            self.training = True
        elif type_ == "checkpoint":
            self.last_checkpoint_step = fields.get("step", self.last_checkpoint_step)
        elif type_ not in ("eval", "log", "alert"):
            return
        self.touch()

    def touch(self, now: Optional[float] = None) -> None:
        self.last_progress = time.monotonic() if now is None else now

    def where(self) -> str:
        """'phase tokenising (3/10)', 'the first training step (step 1)' or 'training step 121' — for stall
        alerts and failures."""
        if self.phase == "training":
            # The loop is inside the step after the last one it reported.
            return f"training step {self.step + 1}" if isinstance(self.step, int) else "training"
        if self.phase == "first step":  # the loop's start-up phase: no step reported yet (step = where it began)
            return f"the first training step (step {self.step + 1})" if isinstance(self.step, int) else \
                "the first training step"
        count = ""
        if self.phase_done is not None and self.phase_total:
            count = f" ({self.phase_done}/{self.phase_total})"
        after = f" after step {self.step}" if self.training and self.step is not None else ""
        return f"phase {self.phase}{count}{after}"


def thread_location(thread: Optional[threading.Thread]) -> str:
    """The innermost frames the thread is executing, as 'file:line in func' (empty when unknown).

    A stalled DeepSpeed loop is usually stuck in one collective or one I/O call; naming it is worth more
    than 'no step for 10 minutes'."""
    if thread is None or thread.ident is None:
        return ""
    frame = sys._current_frames().get(thread.ident)
    if frame is None:
        return ""
    stack = traceback.extract_stack(frame)
    return " <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}" for f in reversed(stack[-3:]))


class StallWatch:
    """One ``stall`` alert when no progress is seen for ``minutes``; armed again by the next progress."""

    def __init__(self, minutes: float) -> None:
        self.limit_s = minutes * 60.0
        self._alerted_at: Optional[float] = None

    def check(self, tracker: RunTracker, paused: bool, thread: Optional[threading.Thread] = None,
              now: Optional[float] = None) -> Optional[dict[str, Any]]:
        now = time.monotonic() if now is None else now
        if paused:
            tracker.touch(now)  # a pause is not a stall; count again from the unpause
            return None
        if self._alerted_at is not None:
            if tracker.last_progress <= self._alerted_at:
                return None  # the same stall: one alert is enough
            self._alerted_at = None  # progress since the alert: armed again
        idle = now - tracker.last_progress
        if idle < self.limit_s:
            return None
        self._alerted_at = now
        where = thread_location(thread)
        idle_s = f"{idle:.0f} s" if idle < 120 else f"{idle / 60:.0f} min"
        message = f"no progress for {idle_s}; the loop was in {tracker.where()}"
        if where:
            message += f", at {where}"
        return {"kind": "stall", "message": message,
                "hint": "check worker.log and the GPUs (a hung collective, a full disk or swapping stall a "
                        "run); `zerotui stop --now` ends it, `zerotui resume` continues from the last "
                        "checkpoint",
                "phase": tracker.phase, "step": tracker.step, "idle_s": round(idle, 1)}


class RamWatch:
    """One ``host_ram`` alert when RAM use passes 90%; armed again once it is back under 85%."""

    def __init__(self, offload: str = "none") -> None:
        self._alerted = False
        self._offload = offload

    def check(self, used: Any, total: Any, rss: Any = None) -> Optional[dict[str, Any]]:
        if not isinstance(used, (int, float)) or not isinstance(total, (int, float)) or total <= 0:
            return None
        frac = used / total
        if self._alerted:
            if frac < RAM_REARM_FRACTION:
                self._alerted = False
            return None
        if frac < RAM_ALERT_FRACTION:
            return None
        self._alerted = True
        rss_s = f"; this run uses {rss / GIB:.1f} GiB" if isinstance(rss, (int, float)) and rss else ""
        if self._offload == "cpu":
            hint = ("CPU offload keeps optimizer states in RAM: offload to NVMe instead, lower --micro-batch "
                    "or --seq-len, or close other programs; at 100% the kernel's OOM killer ends the run "
                    "without a message")
        else:
            hint = ("close other programs or lower --micro-batch / --seq-len; at 100% the kernel's OOM killer "
                    "ends the run without a message")
        return {"kind": "host_ram",
                "message": f"host RAM at {frac:.0%} ({used / GIB:.1f} of {total / GIB:.1f} GiB){rss_s}",
                "hint": hint, "ram_used": used, "ram_total": total}


# -- failures ---------------------------------------------------------------------------------------

@dataclass
class Failure:
    kind: str          # "oom_gpu", "oom_host", "error"
    reason: str        # the run_finished reason: one line
    hint: str = ""


def _first_line(text: str, limit: int = 300) -> str:
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def oom_kind(exc: BaseException) -> Optional[str]:
    """'gpu' for a CUDA out-of-memory, 'host' for host RAM exhaustion, None for anything else."""
    name = type(exc).__name__
    text = str(exc)
    if name == "OutOfMemoryError" or "CUDA out of memory" in text or "CUDA error: out of memory" in text:
        return "gpu"
    if isinstance(exc, MemoryError) or "DefaultCPUAllocator: can't allocate memory" in text \
            or "DefaultCPUAllocator: not enough memory" in text:
        return "host"
    return None


def _flag(field: str, value: Any) -> str:
    """A plan change as the CLI option that makes it (booleans are --x / --no-x)."""
    name = field.replace("_", "-")
    if isinstance(value, bool):
        return f"--{name}" if value else f"--no-{name}"
    return f"--{name} {value}"


def _memory_advice(plan: Any, hardware: Any, kind: str) -> tuple[str, str]:
    """The estimate for this plan, and the fastest plan the estimator says needs less of what ran out.

    The plan that failed may well "fit" by the estimate (the estimate was wrong, or something else held
    memory), so the advice is the fastest recommendation that needs less of the exhausted memory."""
    if plan is None or hardware is None:
        return "", ""
    field, cap_field, label = (("gpu_bytes", "gpu_capacity", "per GPU") if kind == "gpu"
                               else ("cpu_bytes", "cpu_capacity", "of host RAM"))
    try:
        from zerotui.core.estimate.budget import estimate

        b = estimate(plan, hardware)
    except Exception:  # noqa: BLE001 - the reason is still useful without the estimate
        return "", ""
    need, cap = getattr(b, field, 0) or 0, getattr(b, cap_field, 0) or 0
    estimate_s = f"the estimate for this plan is {need / GIB:.1f} GiB {label}"
    if cap:
        estimate_s += f" of {cap / GIB:.1f} GiB"
        if kind == "gpu" and getattr(plan, "gpu_mem_cap", None):
            estimate_s += " (the plan's --gpu-mem-cap)"
    change_s = ""
    try:
        from zerotui.core.estimate.recommend import recommend, why_nothing_fits

        leaner = [r for r in recommend(plan, hardware) if r.changes and (getattr(r.budget, field, 0) or 0) < need]
        if leaner:
            changes = " ".join(_flag(k, new) for k, (_old, new) in leaner[0].changes.items())
            change_s = f"this would fit: {changes} ({leaner[0].reason})"
        else:
            why = why_nothing_fits(plan, hardware)
            change_s = why[0] if why else ""
    except Exception:  # noqa: BLE001
        pass
    return estimate_s, change_s


def describe_failure(exc: BaseException, where: str, plan: Any = None, hardware: Any = None,
                     run_dir: Any = None) -> Failure:
    """The one-line reason for ``run_finished: failed`` (the traceback goes to worker.log only).
    ``run_dir``: the run's folder, which names its NVMe swap folder."""
    from zerotui.core.deepspeed.nvme_swap import buffer_shortage, swap_io_failure
    from zerotui.core.errors import ZeroTuiError

    shortage = buffer_shortage(exc, plan) if plan is not None and plan.uses_nvme() else None
    if shortage:
        return Failure("error", f"{shortage} (in {where})")
    swap = swap_io_failure(exc, getattr(plan, "nvme_path", None), run_dir) if run_dir is not None else None
    if swap:
        return Failure("error", f"{swap} (in {where}); `zerotui resume {Path(run_dir).name}` writes the swap "
                       "folder again from the last complete checkpoint")
    kind = oom_kind(exc)
    if kind:
        what = "GPU memory" if kind == "gpu" else "host RAM"
        estimate_s, change_s = _memory_advice(plan, hardware, kind)
        detail = _first_line(exc)
        parts = [f"ran out of {what} in {where}" + (f": {detail}" if detail else "")]
        if estimate_s:
            parts.append(estimate_s)
        if change_s:
            parts.append(change_s)
        elif kind == "gpu":
            parts.append("try a lower --micro-batch, --grad-ckpt, a higher --stage, or --offload-optimizer cpu")
        else:
            nvme = "--offload-optimizer nvme" if getattr(plan, "stage", None) == 3 else "--stage 3 --offload-optimizer nvme"
            parts.append(f"try {nvme}, a lower --micro-batch, or fewer GPUs per node")
        hint = "`zerotui fit` lists plans that fit this machine"
        return Failure(f"oom_{kind}", "; ".join(parts), hint)
    if isinstance(exc, ZeroTuiError):
        return Failure("error", f"{exc.one_line()} (in {where})", exc.hint)
    detail = _first_line(exc)
    return Failure("error", f"{type(exc).__name__} in {where}" + (f": {detail}" if detail else ""),
                   "worker.log has the full traceback")
