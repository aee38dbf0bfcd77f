"""The one rule for a run's state as every reader shows it: ``zerotui runs``, run-name lookups and the
dashboard (tui/dashboard/controls.py) all end in ``settled_state``.

``status.json`` says what the worker and the supervisor last wrote; the event stream's ``run_finished``
says how the run ended. The end wins, so a supervisor killed between writing ``run_finished`` and its
final status leaves a "completed" run, not a "lost" one, unless the run was launched again after that
end: a resumed run is live (or lost, or finished anew) by its new status, whatever the old end said.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from zerotui.core.events.stream import read_end

LIVE_STATES = ("starting", "running", "paused", "stopping")
FINAL_STATES = ("completed", "stopped", "failed")
#: The run_finished event is the stream's last line or nearly so (a few trailing log lines at most).
TAIL_BYTES = 16 << 10


def last_finished(events: Path) -> Optional[dict[str, Any]]:
    """The stream's last ``run_finished`` event, read from the file's tail, or None."""
    for ev in reversed(read_end(events, TAIL_BYTES, tail=True)):
        if ev.get("type") == "run_finished":
            return ev
        if ev.get("type") == "run_started":
            return None  # a run_started after it: the resumed run has not finished
    return None


def launched_after(status: dict[str, Any], finished: dict[str, Any]) -> bool:
    launched = status.get("launched")
    t = finished.get("t")
    return isinstance(launched, (int, float)) and launched > (float(t) if isinstance(t, (int, float)) else 0.0)


def settled_state(state: str, status: dict[str, Any], finished: Optional[dict[str, Any]]) -> str:
    """``state`` (status.json read as ``folder.run_state`` reads it) settled by the stream's end."""
    if finished is None or state == "damaged" or launched_after(status, finished):
        return state
    final = finished.get("state")
    return final if final in FINAL_STATES else "completed"


def last_alert_note(events: Path) -> list[str]:
    """["its last alert: ..."] from the current session's stream tail (after its last run_started), or [].
    A worker that dies on a full disk cannot write its own end, but its alert often got out first."""
    for ev in reversed(read_end(events, 256 << 10, tail=True)):
        if ev.get("type") == "run_started":
            return []
        if ev.get("type") == "alert" and ev.get("kind") in ("disk", "oom", "host_ram", "checkpoint"):
            return [f"its last alert: {str(ev.get('message', ''))[:300]}"]
    return []
