"""One line per run for lists of runs: state, step, loss, tokens/s, when it started, how long it ran.

Reads only the head and the tail of ``events.jsonl`` (a 32-hour run's file is over 100 MB; a list of
twenty runs must still appear at once) plus ``status.json``. The newest eval can lie far behind the
tail, so it is searched for backwards (``core.events.backscan``: bounded, and remembered between calls).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

from zerotui.core.events.backscan import latest_of_type
from zerotui.core.events.stream import as_float, read_end
from zerotui.core.run.folder import RunPaths, RunSummary

#: Bytes read from each end of the events file: the first run_started sits in the first few lines
#: (after the start-up phases); the last step and run_finished in the last few.
HEAD_BYTES = 64 << 10
TAIL_BYTES = 256 << 10


@dataclass
class RunOverview:
    paths: RunPaths
    state: str
    step: int | None = None
    total_steps: int | None = None
    loss: float | None = None
    tokens_per_s: float | None = None
    started: float | None = None     # first event (or the launch time from status.json)
    last_event: float | None = None
    heartbeat: float | None = None   # the worker's last status.json heartbeat
    reason: str = ""                    # why it ended (run_finished), when it did
    eval: dict | None = None         # the newest eval event (the loop's, or `zerotui eval`'s)

    @property
    def name(self) -> str:
        return self.paths.name

    @property
    def live(self) -> bool:
        return self.state in ("starting", "running", "paused", "stopping")

    def duration_s(self, now: float | None = None) -> float | None:
        if self.started is None:
            return None
        if self.live:
            end = now if now is not None else time.time()
        else:  # finished or lost: up to the last sign of life
            end = max(x for x in (self.last_event, self.heartbeat, self.started) if x is not None)
        return max(0.0, end - self.started)


def overview(summary: RunSummary) -> RunOverview:
    paths = summary.paths
    out = RunOverview(paths, summary.state)
    hb = as_float(summary.status.get("heartbeat"))
    out.heartbeat = hb
    head = [e for e in read_end(paths.events, HEAD_BYTES, tail=False) if isinstance(e, dict)]
    for ev in head:
        if out.started is None and isinstance(ev.get("t"), (int, float)):
            out.started = float(ev["t"])
        if ev.get("type") == "run_started":
            total = ev.get("total_steps")
            out.total_steps = int(total) if isinstance(total, (int, float)) else None
            break
    launched = as_float(summary.status.get("started")) or as_float(summary.status.get("launched"))
    if launched is not None and (out.started is None or launched < out.started):
        out.started = launched
    tail = [e for e in read_end(paths.events, TAIL_BYTES, tail=True) if isinstance(e, dict)]
    attempt_begun = False  # an end before the newest run_started is an earlier attempt's, not this one's
    for ev in reversed(tail):
        t = ev.get("t")
        if out.last_event is None and isinstance(t, (int, float)):
            out.last_event = float(t)
        type_ = ev.get("type")
        if type_ == "run_finished" and not out.reason and not attempt_begun:
            out.reason = str(ev.get("reason") or "")
        elif type_ == "run_started":
            attempt_begun = True
            if out.total_steps is None:
                total = ev.get("total_steps")
                out.total_steps = int(total) if isinstance(total, (int, float)) else None
    out.step, out.loss, out.tokens_per_s = latest_progress(paths, summary.status, tail)
    out.eval = latest_eval(paths)
    return out


def latest_eval(paths: RunPaths) -> dict | None:
    """The newest ``eval`` event of the run, however far back; None when it has none, or when the newest
    worker began below its step (a resume from an earlier checkpoint, or ``--restart`` from 0): the
    weights it scored are gone, the rule core/events/superseded.py applies to every reader."""
    ev = latest_of_type(paths.events, "eval")
    start = latest_of_type(paths.events, "run_started") if ev is not None else None
    if ev is not None and start is not None:
        t, step, since, begun = (as_float(x) for x in (ev.get("t"), ev.get("step"), start.get("t"),
                                                        start.get("start_step")))
        if None not in (t, step, since, begun) and since > t and begun < step:
            return None
    return ev


def eval_figures(ev: dict | None) -> dict[str, float | None]:
    """The numbers of an eval event for a listing: loss, perplexity, ROUGE-L (None where absent)."""
    ev = ev or {}
    return {"eval_loss": as_float(ev.get("loss")), "perplexity": as_float(ev.get("perplexity")),
            "rougeL": as_float(ev.get("rougeL"))}


def eval_scores(ev: dict | None) -> str:
    """An eval's perplexity and ROUGE-L in words ("ppl 7.39 · ROUGE-L 0.412"), those it has; "" if none."""
    from zerotui.core.timefmt import format_number

    figures = eval_figures(ev)
    parts = [f"ppl {format_number(figures['perplexity'])}" if figures["perplexity"] is not None else "",
             f"ROUGE-L {figures['rougeL']:.3f}" if figures["rougeL"] is not None else ""]
    return " · ".join(p for p in parts if p)


#: Most of a run's tail is telemetry; its newest step report is nearly always in the last few KB.
NEAR_TAIL_BYTES = 16 << 10


def latest_progress(paths: RunPaths, status: dict,
                    tail: list[dict] | None = None) -> tuple[int | None, float | None, float | None]:
    """(step, loss, tokens/s) of a list's row, all three from the newest step report of the run's current
    worker, so that the loss shown is the one logged at the step shown.

    status.json cannot give that pair: its step and loss come from different writers after a worker is
    killed (the heartbeat's loss, the supervisor's step from the events: step 10 beside step 5's loss).
    A resumed worker that has reported no step yet stands at its ``run_started``'s ``start_step``, with
    no loss: the killed worker's later reports are superseded (core/events/superseded.py). With neither
    in the events (none written yet, or a tail of telemetry alone), status.json's fields as they are.
    """
    # A near tail first, the whole 256 KB only when it holds neither: most runs are decided without
    # decoding a quarter of a megabyte of telemetry each (lazily: the wider read happens only if needed).
    tails = [tail] if tail is not None else (read_end(paths.events, n, tail=True)
                                             for n in (NEAR_TAIL_BYTES, TAIL_BYTES))
    found = next((ev for events in tails for ev in reversed(events)
                  if isinstance(ev, dict) and ev.get("type") in ("step", "run_started")), None)
    if found is None:
        found = latest_of_type(paths.events, "step")  # far back: a long pause, an hour of telemetry
        started = latest_of_type(paths.events, "run_started") if found is not None else None
        if started is not None and _number(started.get("t")) > _number(found.get("t")):
            found = started
    if found is not None and found.get("type") == "step":
        return _int(found.get("step")), as_float(found.get("loss")), as_float(found.get("tokens_per_s"))
    if found is not None and _int(found.get("start_step")) is not None:  # no step reported since this start
        return _int(found.get("start_step")), None, None
    return _int(status.get("step")), as_float(status.get("loss")), as_float(status.get("tokens_per_s"))


def _number(value: object) -> float:
    f = as_float(value)
    return f if f is not None and math.isfinite(f) else -math.inf


def _int(value: object) -> int | None:
    f = as_float(value)
    return int(f) if f is not None and math.isfinite(f) else None
