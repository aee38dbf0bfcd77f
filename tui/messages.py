"""Messages that thread workers post to the UI (STYLE.md rule 4: threads reach the UI only this way).

Shared by the wizard and the dashboard: append new classes with small edits, never rewrite the file.
Only "latest value" messages define ``can_replace`` (rule 5); a series of points never does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from textual.message import Message


# -- wizard ---------------------------------------------------------------------------------------

@dataclass
class HardwareDetected(Message):
    """``core.hardware.detect()`` finished (or failed: ``error`` says why, ``hardware`` is a fallback)."""

    hardware: Any
    error: str = ""


@dataclass
class BudgetReady(Message):
    """A fresh memory estimate for the plan at ``revision`` (older revisions are dropped)."""

    revision: int
    budget: Any = None          # core.memory.Budget, or None when it could not be computed
    spec: Any = None            # core.models.ModelSpec used for it
    error: str = ""
    seconds: float = 0.0        # how long estimate() took, shown in the breakdown for honesty

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, BudgetReady)


@dataclass
class ModelChoicesListed(Message):
    """Models the model step can offer: built-in, well-known architectures, the HF cache."""

    choices: list[Any] = field(default_factory=list)   # tui.model_sources.ModelChoice


@dataclass
class FitReady(Message):
    """The recommender's ranked plans (best first), or why nothing fits."""

    revision: int
    recommendations: list[Any] = field(default_factory=list)
    why_not: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class WriteSpeedMeasured(Message):
    """The NVMe preflight: bytes/s written to ``path``, or why it could not be measured."""

    path: Path
    bytes_per_s: Optional[float] = None
    error: str = ""


@dataclass
class DataPreviewReady(Message):
    """The first rows of the dataset and its detected format."""

    source: str
    preview: Any = None         # tui.data_preview.Preview (or core.data's equivalent)
    error: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DataPreviewReady)


@dataclass
class RecentRunsListed(Message):
    """Live and recent runs (``core.runs.RunSummary``), newest first, for the hardware screen."""

    runs: list[Any] = field(default_factory=list)


@dataclass
class RunLaunched(Message):
    """``start_run`` returned: the run's folder, or why it could not start."""

    paths: Any = None           # core.runs.RunPaths
    error: str = ""
    hint: str = ""


@dataclass
class PresetsListed(Message):
    """``core.presets.list_presets()`` for the preset picker."""

    presets: list[Any] = field(default_factory=list)
    error: str = ""


# -- dashboard and runs ---------------------------------------------------------------------------

@dataclass
class HistoryLoaded(Message):
    """The events file was read from the start (on attach, or again after it was truncated): the
    thread hands its ``core.history.RunHistory`` over to the UI, which owns it from then on."""

    history: Any
    offset: int = 0             # where the follower continues
    seconds: float = 0.0        # how long the read took (shown in the log)


@dataclass
class EventsArrived(Message):
    """A batch of new events (never one message per event), already parsed into columns off the UI
    thread (``core.event_columns.Parsed``). A series of points: no can_replace."""

    parsed: Any


@dataclass
class RunStateChanged(Message):
    """The run's state from status.json (running, paused, lost, ...): only the latest one matters."""

    state: str
    status: dict[str, Any] = field(default_factory=dict)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunStateChanged)


@dataclass
class EstimateReady(Message):
    """The memory estimate of the run's plan (GPU bytes per GPU), for the reference line."""

    gpu_bytes: Optional[int] = None
    error: str = ""


@dataclass
class RunsListed(Message):
    """The runs screen's rows (``core.run_overview.RunOverview``), newest first."""

    rows: list[Any] = field(default_factory=list)
    error: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunsListed)


@dataclass
class RunResumeDone(Message):
    """``core.launch.resume_run`` returned (a new worker continues the run), or why it could not."""

    paths: Any = None
    error: str = ""

    @classmethod
    def after_resume(cls, paths: Any) -> "RunResumeDone":
        """Resume the run in ``paths`` (blocking: call it from a thread worker) and say how it went."""
        from zerotui.core.errors import ZeroTuiError
        from zerotui.core.launch import resume_run

        try:
            return cls(resume_run(paths))
        except ZeroTuiError as err:
            return cls(None, err.one_line())


@dataclass
class InputsChecked(Message):
    """``core.inputcheck.check_inputs`` on the plan at ``revision``: the data file and model folder are
    usable for training ("" ), or the one-line reason they are not (a launch blocker on the review)."""

    revision: int
    error: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, InputsChecked)
