"""What the worker's main thread tells the training thread: stop, pause, checkpoint.

The main thread owns signals and ``control.jsonl``; it sets flags here. The training loop reads them
once per optimizer step (never per micro-batch, never blocking), so a request takes effect at the next
step boundary, on every rank at the same step (the engine broadcasts rank 0's flags).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class ControlState:
    stop: threading.Event = field(default_factory=threading.Event)        # graceful: checkpoint, then end
    stop_now: threading.Event = field(default_factory=threading.Event)    # end at the next step, no checkpoint
    resume: threading.Event = field(default_factory=threading.Event)      # set = not paused
    checkpoint: threading.Event = field(default_factory=threading.Event)  # save at the next step boundary
    reason: str = ""                                                      # why a stop was asked (for run_finished)

    def __post_init__(self) -> None:
        self.resume.set()

    def request_stop(self, reason: str = "stop requested", now: bool = False) -> None:
        self.reason = reason
        (self.stop_now if now else self.stop).set()
        self.resume.set()  # a paused loop must wake up to stop

    def pause(self) -> None:
        self.resume.clear()

    def unpause(self) -> None:
        self.resume.set()

    @property
    def paused(self) -> bool:
        return not self.resume.is_set()

    @property
    def stopping(self) -> bool:
        return self.stop.is_set() or self.stop_now.is_set()
