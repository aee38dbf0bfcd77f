"""Step events that a resumed worker redid, and readers that drop them.

A worker killed at step K resumes from its last complete checkpoint C < K, so the stream reports steps
C+1..K twice: first by the killed worker, then by the resumed one, which recomputes them from the
checkpoint (same weights, data position and RNG: the same losses, see docs/reliability.md, "kill -9").
The first reports are *superseded*: the state they describe died with the worker. The rule every reader
applies: a ``step`` (or ``eval``) event is superseded when a later ``run_started`` has a ``start_step``
below its step. After a resume the first step event is therefore the first logged step after C, and
the kept events hold every logged step exactly once.

``drop_superseded`` applies the rule to a whole file's parsed batches before they are ingested
(``history_reader.load_history``). A live reader that has already drawn superseded points rebuilds from
the file when the resume arrives (``history_reader.EventFollower``): bucketed series cannot un-add a
point. Raw readers (``events.read_new``) see every event and apply the rule when they need it.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from zerotui.core.events.columns import STEP_COLUMNS, Parsed


def drop_superseded(batches: list[Parsed]) -> int:
    """Remove, in place, the step and eval events that a later resume redid (see the module docstring);
    returns how many step events went. Times order the events: a resumed worker starts after the one
    before it ended, and ``t`` is the only order that survives ``parse_events``' split into columns."""
    resumes = [(float(ev["t"]), float(ev["start_step"])) for b in batches for ev in b.others
               if ev.get("type") == "run_started" and _number(ev.get("start_step"))]
    if not resumes:
        return 0
    dropped = 0
    for b in batches:
        b.others = [ev for ev in b.others if not (ev.get("type") == "eval" and _number(ev.get("step"))
                                                  and _is_superseded(float(ev["t"]), float(ev["step"]), resumes))]
        if b.steps is None:
            continue
        t, step = b.steps[:, 0], b.steps[:, 1]
        gone = np.zeros(len(t), dtype=bool)
        for t_resume, start in resumes:
            gone |= (t < t_resume) & (step > start)
        if not gone.any():
            continue
        dropped += int(gone.sum())
        if gone[-1]:  # the batch's newest step went: the newest kept one stands in for it
            kept = np.flatnonzero(~gone)
            b.step_last = (dict(zip(STEP_COLUMNS, (float(x) for x in b.steps[kept[-1]])), type="step")
                           if len(kept) else None)
        b.steps = b.steps[~gone] if b.step_last is not None else None
    return dropped


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_superseded(t: float, step: float, resumes: list[tuple[float, float]]) -> bool:
    return any(t < t_resume and step > start for t_resume, start in resumes)


def superseded_flags(events: list[Any]) -> list[bool]:
    """For decoded events in file order: True where the event is a superseded step or eval (the rule
    above). What a raw reader of ``events.read_new`` output uses to keep each step once."""
    flags = [False] * len(events)
    floor = math.inf  # the lowest start_step of any later run_started
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if not isinstance(ev, dict):
            continue
        kind = ev.get("type")
        if kind == "run_started" and _number(ev.get("start_step")):
            floor = min(floor, float(ev["start_step"]))
        elif kind in ("step", "eval") and _number(ev.get("step")) and float(ev["step"]) > floor:
            flags[i] = True
    return flags
