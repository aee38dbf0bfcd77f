"""A run's whole history as the dashboard needs it, built from ``events.jsonl`` in bounded memory.

``RunHistory.ingest`` applies a batch of parsed events (``core.events.columns.Parsed``) to downsampled
series (``core.events.series``) plus the few scalars a dashboard shows (step, ETA, phase, last checkpoint,
outcome) and a bounded log. ``apply(events)`` parses and ingests; the first read of a long file
(``core.events.reader.load_history``) and the live batches that follow both end up here, so the two
paths agree.

Steps redone after a resume are dropped (``core/events/superseded.py``): when reading a whole file, before
ingesting; live, ``holds_superseded`` tells the reader to rebuild from the file.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional

import numpy as np

from zerotui.core.events.columns import HOST_SERIES, STEP_SERIES, Parsed, parse_events
from zerotui.core.events.stream import as_float
from zerotui.core.events.series import Series
from zerotui.core.events.smoothing import ema

#: Weight of the newest logged loss in the smoothed curve: ~20 logged points of memory, close to what
#: TensorBoard's default smoothing (0.6 per point, on far fewer points) looks like on dense curves.
SMOOTHING = 0.05
#: Steps remembered for the ETA: the rate over the last ones follows speed changes (a resume on other
#: hardware, an eval pause) without jumping on every step.
RATE_WINDOW = 64
LOG_CAPACITY = 500
ALERT_CAPACITY = 200

#: Which chart an alert belongs to (the dashboard highlights it).
ALERT_GROUP = {"nonfinite_loss": "loss", "loss_scale_collapse": "scale", "stall": "speed",
               "host_ram": "host", "oom": "gpu", "disk": "host", "data": "loss", "rank": "gpu",
               "memory_pressure": "gpu"}


@dataclass
class LogEntry:
    t: float
    severity: str          # information | warning | error
    text: str
    kind: str = "log"      # the event type it came from


@dataclass
class PhaseInfo:
    name: str
    first_t: float
    last_t: float
    done: Optional[float] = None
    total: Optional[float] = None


@dataclass
class Changes:
    """What one ``apply`` touched: chart groups to redraw, and new items to show once."""

    groups: set[str] = field(default_factory=set)   # loss scale gpu speed host stats phase log state
    alerts: list[dict] = field(default_factory=list)
    log: list[LogEntry] = field(default_factory=list)
    acks: list[dict] = field(default_factory=list)


def _series() -> Series:
    return Series()


class RunHistory:
    """Everything the dashboard draws, for one run. Not thread-safe: one owner at a time."""

    def __init__(self) -> None:
        self.series: dict[str, Series] = {name: _series() for name in STEP_SERIES + HOST_SERIES}
        self.series["loss_smooth"] = _series()
        self.series["eval_loss"] = _series()
        self.gpu_indices: list[int] = []
        self.gpu_total: dict[int, float] = {}     # memory per GPU (bytes), from the latest telemetry
        self.gpu_latest: dict[int, dict] = {}     # latest reading per GPU (util, power, temperature)
        self.ram_total: Optional[float] = None
        self.events = 0
        self.first_t: Optional[float] = None
        self.last_t: Optional[float] = None
        self.started: Optional[dict] = None       # the latest run_started (a resume adds one)
        self.started_t: Optional[float] = None    # the first run_started: when training began
        self.latest_start_t: Optional[float] = None  # the newest run_started (a resumed worker's)
        self.worker_t: Optional[float] = None     # when the current worker's start-up began
        self.train_clock: Optional[tuple[float, float]] = None  # (t, elapsed_s) of the newest step
        self.resumes = 0
        self.superseded = 0                       # step events dropped as redone by a resumed worker
        self.holds_superseded = False             # live: a resume redid steps already drawn; rebuild
        self.phases: dict[str, PhaseInfo] = {}
        self.phase: Optional[str] = None          # the current start-up phase; None once training
        self.step: Optional[dict] = None          # the latest step event
        self.step_events = 0
        self.skipped_total = 0.0
        self.loss_ema: Optional[float] = None
        self.last_eval: Optional[dict] = None
        self.last_checkpoint: Optional[dict] = None
        self.checkpoints = 0
        self.finished: Optional[dict] = None
        self.last_ack: Optional[dict] = None
        self.last_telemetry_t: Optional[float] = None
        self.alerts: deque[dict] = deque(maxlen=ALERT_CAPACITY)
        self.log: deque[LogEntry] = deque(maxlen=LOG_CAPACITY)
        self._rate: deque[tuple[float, float]] = deque(maxlen=RATE_WINDOW)
        self._until: Optional[float] = None

    # -- facts derived for display ----------------------------------------------------------------
    @property
    def total_steps(self) -> Optional[int]:
        total = (self.started or {}).get("total_steps")
        return int(total) if isinstance(total, (int, float)) and total > 0 else None

    @property
    def plan(self) -> dict:
        plan = (self.started or {}).get("plan")
        return plan if isinstance(plan, dict) else {}

    @property
    def launch_gpu_bytes(self) -> Optional[int]:
        """The GPU memory per GPU the run was launched with as its estimate (run_started's ``estimate``,
        recorded by the launch): the GPU chart's reference line. Readers never estimate themselves."""
        budget = (self.started or {}).get("estimate")
        gpu = budget.get("gpu_bytes") if isinstance(budget, dict) else None
        return int(gpu) if isinstance(gpu, (int, float)) and gpu > 0 else None

    @property
    def current_step(self) -> Optional[int]:
        if self.step is not None and isinstance(self.step.get("step"), (int, float)):
            return int(self.step["step"])
        return None

    def steps_per_s(self) -> Optional[float]:
        if len(self._rate) < 2:
            return None
        (t0, s0), (t1, s1) = self._rate[0], self._rate[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 and s1 > s0 else None

    def eta_s(self) -> Optional[float]:
        """Seconds to the last step at the recent rate; None when unknown or finished."""
        total, step, rate = self.total_steps, self.current_step, self.steps_per_s()
        if self.finished or total is None or step is None or not rate:
            return None
        return max(0.0, (total - step) / rate)

    def elapsed_s(self, now: float) -> Optional[float]:
        """Training time, up to ``now`` or the end: the newest step's ``elapsed_s`` (the worker's own
        clock, which a resumed worker continues from its checkpoint, so time stopped and start-ups are
        not in it) plus the time since that step while its worker goes on. Streams without it (older
        writers): the wall-clock time since training, or start-up, began."""
        end = float(self.finished["t"]) if self.finished else now
        if self.train_clock is not None:
            t, elapsed = self.train_clock
            # A newer run_started is a resumed worker still starting: its training clock has not moved.
            current = self.latest_start_t is None or t >= self.latest_start_t
            return elapsed + (max(0.0, end - t) if current else 0.0)
        start = self.started_t if self.started_t is not None else self.first_t
        if start is None:
            return None
        return max(0.0, end - start)

    def startup_s(self, now: float) -> Optional[float]:
        """How long the current worker has been starting up (to its first step, or the end): the one
        clock of the start-up panel and of the numbers beside it."""
        if self.worker_t is None:
            return None
        end = float(self.finished["t"]) if self.finished else now
        step_t = float(self.step["t"]) if self.step is not None else None
        if step_t is not None and step_t >= (self.latest_start_t or 0.0):  # this worker has trained
            end = min(end, step_t)
        return max(0.0, end - self.worker_t)

    def nbytes(self) -> int:
        return sum(s.nbytes() for s in self.series.values())

    # -- ingest -----------------------------------------------------------------------------------
    def apply(self, events: Iterable[Any]) -> Changes:
        """Parse and ingest a batch of decoded events (a live poll's worth)."""
        return self.ingest(parse_events(events))

    def ingest(self, parsed: Parsed, until: Optional[float] = None) -> Changes:
        """Apply one parsed batch. Within a batch the rare non-numeric events go first, then the steps
        and telemetry in bulk: a batch is a fraction of a second live, or 4 MiB of a file on attach.
        ``until``: the file's last event time when reading a whole file (see ``Series.extend``)."""
        self._until = until
        ch = Changes()
        for ev in parsed.others:
            t = float(ev["t"])
            self._seen(t, t, 1)
            self._other(ev.get("type"), ev, ch)
        if parsed.steps is not None and parsed.step_last is not None:
            self._steps(parsed.steps, parsed.step_last, ch)
        if parsed.tele is not None and parsed.tele_last is not None:
            self._telemetry(parsed, ch)
        for entry in ch.log:
            self.log.append(entry)
        return ch

    def _seen(self, lo: float, hi: float, count: int) -> None:
        self.events += count
        if self.first_t is None or lo < self.first_t:
            self.first_t = lo
        if self.worker_t is None:
            self.worker_t = lo
        if self.last_t is None or hi > self.last_t:
            self.last_t = hi

    def _note(self, ch: Changes, t: float, severity: str, text: str, kind: str) -> None:
        ch.log.append(LogEntry(float(t), severity, text, kind))
        ch.groups.add("log")

    def _other(self, type_: Any, ev: dict, ch: Changes) -> None:
        handler = self._HANDLERS.get(type_)  # unknown types are skipped (newer writers, other tools)
        if handler is not None:
            handler(self, float(ev["t"]), ev, ch)

    def _on_phase(self, t: float, ev: dict, ch: Changes) -> None:
        if self.finished is not None:
            # A phase after run_finished is a resumed worker starting: the run is live again, and the
            # start-up shown (its phases, its clock) is this worker's, not the first one's.
            self.finished = None
            self.phases = {}
            self.worker_t = t
            ch.groups.add("state")
        name = str(ev.get("name") or "?")
        info = self.phases.get(name)
        if info is None:
            info = self.phases[name] = PhaseInfo(name, t, t)
            self._note(ch, t, "information", f"phase: {name}", "phase")
        info.last_t, info.done, info.total = t, as_float(ev.get("done")), as_float(ev.get("total"))
        if self.step is None or self.finished is not None:
            self.phase = name
        ch.groups.update(("phase", "stats"))

    def _on_run_started(self, t: float, ev: dict, ch: Changes) -> None:
        resumed = self.started is not None or ev.get("resumed_from") is not None
        self.started = ev
        if self.started_t is None:
            self.started_t = t
        self.latest_start_t = t
        self.phase = None
        self.finished = None  # a resumed run is live again
        self._rate.clear()
        start = as_float(ev.get("start_step"))
        if start is not None and self.current_step is not None and self.current_step > start:
            # The steps after the checkpoint are redone from here: show where the worker really is.
            self.holds_superseded = True
            self.step = {"t": t, "step": int(start)}
        if resumed:
            self.resumes += 1
            where = ev.get("resumed_from") or ev.get("start_step") or ev.get("step")
            self._note(ch, t, "information", f"resumed from {where}" if where else "resumed", "run_started")
        else:
            self._note(ch, t, "information", f"training started: {self.total_steps or '?'} steps, "
                       f"world size {ev.get('world_size', '?')}", "run_started")
        ch.groups.update(("stats", "phase", "state", "gpu"))

    def _on_eval(self, t: float, ev: dict, ch: Changes) -> None:
        loss, step = as_float(ev.get("loss")), as_float(ev.get("step"))
        self.series["eval_loss"].append(t, step if step is not None else np.nan,
                                        loss if loss is not None else np.nan)
        self.last_eval = ev
        self._note(ch, t, "information", f"eval loss {_fmt(loss)} at step {_int(step)}", "eval")
        ch.groups.update(("loss", "stats"))

    def _on_checkpoint(self, t: float, ev: dict, ch: Changes) -> None:
        self.last_checkpoint = ev
        self.checkpoints += 1
        self._note(ch, t, "information", f"checkpoint at step {_int(as_float(ev.get('step')))}: "
                   f"{ev.get('path', '')}", "checkpoint")
        ch.groups.add("stats")

    def _on_alert(self, t: float, ev: dict, ch: Changes) -> None:
        self.alerts.append(ev)
        ch.alerts.append(ev)
        kind = str(ev.get("kind") or "alert")
        hint = f" — {ev['hint']}" if ev.get("hint") else ""
        self._note(ch, t, "warning", f"{kind}: {ev.get('message', '')}{hint}", "alert")
        ch.groups.add(ALERT_GROUP.get(kind, "loss"))

    def _on_log(self, t: float, ev: dict, ch: Changes) -> None:
        level = str(ev.get("level") or "info").lower()
        severity = {"warning": "warning", "warn": "warning", "error": "error"}.get(level, "information")
        self._note(ch, t, severity, str(ev.get("message", "")), "log")

    def _on_control_ack(self, t: float, ev: dict, ch: Changes) -> None:
        self.last_ack = ev
        ch.acks.append(ev)
        ok = bool(ev.get("ok"))
        msg = f": {ev['message']}" if ev.get("message") else ""
        self._note(ch, t, "information" if ok else "warning",
                   f"{ev.get('command', '?')} {'acknowledged' if ok else 'refused'}{msg}", "control_ack")
        ch.groups.add("state")

    def _on_run_finished(self, t: float, ev: dict, ch: Changes) -> None:
        self.finished = ev
        self.phase = None
        state = str(ev.get("state") or "?")
        reason = f": {ev['reason']}" if ev.get("reason") else ""
        self._note(ch, t, "error" if state == "failed" else "information", f"run {state}{reason}", "run_finished")
        gpu = ev.get("gpu_release")  # written by the supervisor of a multi-process run (core/hardware/gpu_release.py)
        if isinstance(gpu, dict) and gpu.get("note") and (gpu.get("checked") or gpu.get("held")):
            self._note(ch, t, "warning" if gpu.get("held") else "information", str(gpu["note"]), "run_finished")
        ch.groups.update(("state", "stats", "phase"))

    _HANDLERS: dict[str, Callable[["RunHistory", float, dict, Changes], None]] = {
        "phase": _on_phase,
        "run_started": _on_run_started,
        "eval": _on_eval,
        "checkpoint": _on_checkpoint,
        "alert": _on_alert,
        "log": _on_log,
        "control_ack": _on_control_ack,
        "run_finished": _on_run_finished,
    }

    def _steps(self, cols: np.ndarray, last: dict, ch: Changes) -> None:
        t, step = cols[:, 0], cols[:, 1]
        self._seen(float(t.min()), float(t.max()), len(t))
        until = self._until
        for i, name in enumerate(STEP_SERIES, start=2):
            self.series[name].extend(t, step, cols[:, i], until)
        smooth, self.loss_ema = ema(cols[:, 2], self.loss_ema, SMOOTHING)
        self.series["loss_smooth"].extend(t, step, smooth, until)
        self.skipped_total += float(np.nansum(cols[:, 2 + STEP_SERIES.index("skipped")]))
        self.step = last
        clock = as_float(last.get("elapsed_s"))
        if clock is not None:
            self.train_clock = (float(last["t"]), clock)
        self.step_events += len(t)
        if self.phase is not None:
            self.phase = None
            ch.groups.add("phase")
        for k in range(max(0, len(t) - RATE_WINDOW), len(t)):
            if math.isfinite(step[k]):
                self._rate.append((float(t[k]), float(step[k])))
        ch.groups.update(("loss", "scale", "speed", "stats"))

    def _telemetry(self, parsed: Parsed, ch: Changes) -> None:
        cols, last = parsed.tele, parsed.tele_last
        assert cols is not None and last is not None
        t = cols[:, 0]
        self._seen(float(t.min()), float(t.max()), len(t))
        step = np.full(len(t), float(self.current_step) if self.current_step is not None else np.nan)
        until = self._until
        for i, name in enumerate(HOST_SERIES, start=1):
            self.series[name].extend(t, step, cols[:, i], until)
        total = as_float(last.get("ram_total"))
        if total:
            self.ram_total = total
        self.last_telemetry_t = float(t[-1])
        for gpu in parsed.gpus:
            if gpu.index not in self.gpu_indices:
                self.gpu_indices.append(gpu.index)
                self.gpu_indices.sort()
                self.series[f"gpu{gpu.index}.util"] = _series()
                self.series[f"gpu{gpu.index}.mem_used"] = _series()
            self.series[f"gpu{gpu.index}.util"].extend(t[gpu.rows], step[gpu.rows], gpu.util, until)
            self.series[f"gpu{gpu.index}.mem_used"].extend(t[gpu.rows], step[gpu.rows], gpu.mem_used, until)
        latest = last.get("gpus")  # the newest reading of each GPU: totals, power, temperature
        for pos, g in enumerate(latest if isinstance(latest, list) else []):
            if isinstance(g, dict):
                idx = g.get("index", pos)
                self.gpu_latest[idx if isinstance(idx, int) else pos] = g
        for idx, g in self.gpu_latest.items():
            total = as_float(g.get("mem_total"))
            if total:
                self.gpu_total[idx] = total
        ch.groups.update(("gpu", "host"))


# -- helpers --------------------------------------------------------------------------------------

def _fmt(value: Optional[float]) -> str:
    return "?" if value is None else f"{value:.4g}"


def _int(value: Optional[float]) -> str:
    return "?" if value is None or not math.isfinite(value) else str(int(value))
