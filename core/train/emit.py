"""How the training run reports: ``emit(type_, **fields)``, one event per call.

The engine and the loop call ``emit`` on every rank; the caller decides what reaches ``events.jsonl``
(the worker writes rank 0's events and lets every rank's tracker learn the step and phase, so a failing
rank can say where it was). The event types and their fields are those of ``zerotui.core.events.stream``.
"""
from __future__ import annotations

from typing import Any, Protocol


class Emit(Protocol):
    def __call__(self, type_: str, /, **fields: Any) -> None: ...
