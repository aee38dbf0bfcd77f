"""The worker's side of ``control.jsonl``: read new commands, apply them to the ControlState, answer.

Any client appends commands (``core/runs.send_control``); the worker's main thread polls the file and
answers each command once with a ``control_ack`` event (command, id, ok, message), which is what
``zerotui stop`` waits for and prints.

A resumed run has the previous worker's commands in the same file. Those must not be obeyed again (a
stop that ended the last worker would end the new one at once), so a command is skipped when its id was
acknowledged already, or when it was sent before this worker was launched (a command to a dead worker).
"""
from __future__ import annotations

import json
from typing import Any

from zerotui.core.train.control import ControlState
from zerotui.core.run.folder import RunPaths, read_control
from zerotui.core.run.monitor import RunTracker


class ControlInbox:
    def __init__(self, paths: RunPaths, control: ControlState, tracker: RunTracker, launched: float = 0.0) -> None:
        self.paths = paths
        self.control = control
        self.tracker = tracker
        self.launched = launched
        self._offset = 0
        self._seen: set[str] = set()

    def skip_acknowledged(self) -> None:
        """Remember the ids the run's earlier workers acknowledged (read once, at start)."""
        try:
            with open(self.paths.events, "rb") as fh:
                lines = [ln for ln in fh if b'"control_ack"' in ln]  # days of telemetry: filter, don't parse
        except FileNotFoundError:
            return
        for raw in lines:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if isinstance(ev, dict) and ev.get("type") == "control_ack" and ev.get("id"):
                self._seen.add(str(ev["id"]))

    def poll(self) -> list[dict[str, Any]]:
        """Apply the commands appended since the last poll; the ``control_ack`` fields for each."""
        commands, self._offset = read_control(self.paths, self._offset)
        acks = []
        for cmd in commands:
            cid = str(cmd.get("id") or "")
            if cid and cid in self._seen:
                continue
            self._seen.add(cid)
            t = cmd.get("t")
            if self.launched and isinstance(t, (int, float)) and t < self.launched:
                continue  # sent to an earlier worker of this run
            ok, message = self.apply(cmd["command"], cmd)
            acks.append({"command": cmd["command"], "id": cid or None, "ok": ok, "message": message})
        return acks

    def apply(self, command: str, cmd: dict[str, Any]) -> tuple[bool, str]:
        c = self.control
        who = cmd.get("by") or "a client"
        if command == "stop":
            if c.stop_now.is_set():
                return True, "already stopping at the next step"
            c.request_stop(f"stop requested by {who}")
            return True, "stopping: a checkpoint is saved at the next step boundary, then the run ends"
        if command == "stop-now":
            c.request_stop(f"immediate stop requested by {who}", now=True)
            return True, "stopping at the next step boundary without a checkpoint"
        if command == "pause":
            if c.stopping:
                return False, "the run is stopping; pause ignored"
            if c.paused:
                return True, "already paused"
            c.pause()
            return True, "pausing at the next step boundary"
        if command == "resume":
            if not c.paused:
                return True, "not paused"
            c.unpause()
            self.tracker.touch()  # the stall clock starts again from here
            return True, "resumed"
        if command == "checkpoint":
            if c.stopping:
                return False, "the run is stopping; its final checkpoint is on the way"
            c.checkpoint.set()
            return True, "a checkpoint is saved at the next step boundary"
        return False, f"unknown command {command!r}"
