"""One trial's run as the driver follows it: read the run's new events without blocking, report each eval
loss to the Optuna trial, stop the run at once when the pruner says so, and tell when the run has ended.

The driver polls every trial it has going in turn from its one thread (several at once with --parallel),
so nothing here waits; Optuna is only ever called from that thread.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zerotui.core.errors import ZeroTuiError
from zerotui.core.events.stream import read_new
from zerotui.core.run.folder import RunPaths, run_state, send_control
from zerotui.core.sweep.slots import Slot

FINAL = ("completed", "stopped", "failed")
#: Run states with no run_finished to wait for: the worker is gone, or its folder cannot be read.
GONE = ("lost", "damaged")


@dataclass
class TrialRun:
    number: int
    trial: Any                       # optuna.trial.Trial: report() and should_prune()
    run: RunPaths
    slot: Slot
    asked: float = field(default_factory=time.monotonic)
    offset: int = 0
    last: float | None = None     # the last finite eval loss
    pruned: bool = False
    reported: set[int] = field(default_factory=set)  # steps the study has already (a restarted driver)
    outcome: str | None = None    # the run's final state once it ended
    timed: bool = True               # False for a trial a previous driver asked: its start time is gone
    stepped: bool = False            # the run has trained a step: its start-up is behind it
    told: set[str] = field(default_factory=set)  # the stop commands sent to the run

    def poll(self, log: Callable[[str], None]) -> bool:
        """Read what the run wrote since the last poll; True once the run has ended."""
        if self._read(log):
            return True
        state = run_state(self.run)
        if state in GONE:
            self.outcome = state
        elif state in FINAL and not self._read(log):
            # status.json says it ended; the stream's run_finished may have landed just after the read.
            self.outcome = state
        return self.outcome is not None

    def _read(self, log: Callable[[str], None]) -> bool:
        evs, self.offset = read_new(self.run.events, self.offset)
        for ev in evs:
            self.stepped = self.stepped or ev.get("type") == "step"
            if ev.get("type") == "eval" and _finite(ev.get("loss")):
                self.last = float(ev["loss"])
                self._report(int(ev.get("step") or 0), log)
            elif ev.get("type") == "run_finished":
                self.outcome = str(ev.get("state"))
                return True
        return False

    def _report(self, step: int, log: Callable[[str], None]) -> None:
        if self.pruned or step in self.reported:
            return
        self.reported.add(step)
        self.trial.report(self.last, step)
        if self.trial.should_prune():
            self.pruned = True
            log(f"trial {self.number}: pruned at step {step} (eval loss {self.last:.4g}); {self.slot.label} is free")
            try:
                send_control(self.run, "stop-now", by="sweep")
            except ZeroTuiError as err:
                log(f"trial {self.number}: could not stop run {self.run.name}: {err.one_line()}")

    def stop(self, command: str = "stop") -> None:
        """The sweep itself is being stopped: ``stop`` (a checkpoint, then exit) or ``stop-now``. Each
        command is sent once, however often the driver passes the stop on."""
        if command in self.told:
            return
        self.told.add(command)
        try:
            send_control(self.run, command, by="sweep")
        except ZeroTuiError:
            pass

    @property
    def wall_s(self) -> float:
        return round(time.monotonic() - self.asked, 1)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
