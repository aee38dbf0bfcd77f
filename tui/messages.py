"""Messages that thread workers post to the UI (threads reach the UI only this way: ``call_from_thread``
would block the thread until the UI ran the callback), and the screens' requests to the App.

Only "latest value" messages define ``can_replace``; a series of points never does (replacement would
silently drop points).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from textual.message import Message


# -- wizard ---------------------------------------------------------------------------------------

@dataclass
class HardwareDetected(Message):
    """``core.hardware.detect.detect()`` finished (or failed: ``error`` says why, ``hardware`` is a fallback)."""

    hardware: Any
    error: str = ""


@dataclass
class BudgetReady(Message):
    """A fresh memory estimate for the plan at ``revision`` (older revisions are dropped)."""

    revision: int
    budget: Any = None          # core.estimate.budget.Budget, or None when it could not be computed
    spec: Any = None            # core.model.spec.ModelSpec used for it
    error: str = ""
    field: str = ""             # the Plan field ``error`` is about (ZeroTuiError.field), "" when none
    seconds: float = 0.0        # how long estimate() took, shown in the breakdown for honesty

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, BudgetReady)


@dataclass
class ModelChoicesListed(Message):
    """Models the model step can offer: built-in, well-known architectures, the HF cache."""

    choices: list[Any] = field(default_factory=list)   # tui.wizard.model_sources.ModelChoice


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
    preview: Any = None         # tui.wizard.data_preview.Preview (or core.data.prepare's equivalent)
    error: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DataPreviewReady)


@dataclass
class RecentRunsListed(Message):
    """Live and recent runs (``core.run.folder.RunSummary``), newest first, for the hardware screen."""

    runs: list[Any] = field(default_factory=list)


@dataclass
class RunLaunched(Message):
    """``start_run`` returned: the run's folder, or why it could not start."""

    paths: Any = None           # core.run.folder.RunPaths
    error: str = ""
    hint: str = ""


@dataclass
class PresetsListed(Message):
    """``core.plan.presets.list_presets()`` for the preset picker."""

    presets: list[Any] = field(default_factory=list)
    error: str = ""


@dataclass
class PresetFits(Message):
    """Whether each listed preset fits this machine by the estimator: name -> "fits" / "needs ..."."""

    marks: dict[str, str] = field(default_factory=dict)


# -- dashboard and runs ---------------------------------------------------------------------------

@dataclass
class HistoryLoaded(Message):
    """The events file was read from the start (on attach, or again after it was truncated): the
    thread hands its ``core.events.history.RunHistory`` over to the UI, which owns it from then on."""

    history: Any
    offset: int = 0             # where the follower continues
    seconds: float = 0.0        # how long the read took (shown in the log)


@dataclass
class EventsArrived(Message):
    """A batch of new events (never one message per event), already parsed into columns off the UI
    thread (``core.events.columns.Parsed``). A series of points: no can_replace."""

    parsed: Any


@dataclass
class RunStateChanged(Message):
    """The run's state from status.json (running, paused, lost, ...): only the latest one matters."""

    state: str
    status: dict[str, Any] = field(default_factory=dict)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunStateChanged)


@dataclass
class RunsListed(Message):
    """The runs screen's rows (``core.run.overview.RunOverview``), newest first."""

    rows: list[Any] = field(default_factory=list)
    error: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RunsListed)


@dataclass
class RunResumeDone(Message):
    """``core.run.start.resume_run`` returned (a new worker continues the run), or why it could not."""

    paths: Any = None
    error: str = ""

    @classmethod
    def after_resume(cls, paths: Any) -> "RunResumeDone":
        """Resume the run in ``paths`` (blocking: call it from a thread worker) and say how it went."""
        from zerotui.core.errors import ZeroTuiError
        from zerotui.core.run.start import resume_run

        try:
            return cls(resume_run(paths))
        except ZeroTuiError as err:
            return cls(None, err.one_line())


@dataclass
class InputsChecked(Message):
    """``core.run.input_check.check_inputs`` on the plan at ``revision``: the data file and model folder are
    usable for training ("" ), or the one-line reason they are not (a launch blocker on the review)."""

    revision: int
    error: str = ""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, InputsChecked)


# -- navigation: screens ask the App, which knows every screen ------------------------------------

@dataclass
class OpenRun(Message):
    """Open the dashboard on a run folder (``live``: with its control keys)."""

    paths: Any                  # core.run.folder.RunPaths
    live: bool = True


@dataclass
class ShowRuns(Message):
    """Open the list of runs in ``runs_dir`` (None: the default runs folder)."""

    runs_dir: Optional[Path] = None


@dataclass
class OpenChat(Message):
    """Open the chat screen on a finished run's model (``core.run.folder.RunPaths``)."""

    paths: Any


@dataclass
class OpenSweep(Message):
    """Open the sweep screen on a sweep folder (``core.sweep.folder.SweepPaths``) started from the wizard."""

    paths: Any


# -- chat with a finished run's model -------------------------------------------------------------

@dataclass
class ChatModelLoaded(Message):
    """``core.infer.weights.load_run_model`` returned for the pick ``choice``: the model
    (``core.infer.weights.RunModel``), or the one-line reason it could not be loaded."""

    choice: str
    run_model: Any = None
    error: str = ""


@dataclass
class ChatText(Message):
    """A piece of the answer being generated, as it was decoded. A series: no can_replace."""

    turn: int
    text: str


@dataclass
class ChatReplied(Message):
    """The answer of turn ``turn`` is complete (``text``, the whole of it) or failed (``error``)."""

    turn: int
    text: str = ""
    error: str = ""
    stopped: bool = False       # cut short on request (Escape, a new checkpoint pick)
