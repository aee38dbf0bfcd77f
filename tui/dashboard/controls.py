"""The dashboard's run controls: pause / resume, checkpoint, stop, stop now, resume a finished run.

A mixin of ``DashboardScreen`` (kept apart so each file stays readable). Control keys append to
``control.jsonl`` (``core.run.folder.send_control``); the worker's ``control_ack`` event shows up in the log.
Which keys apply follows the run's state as shown (``finished``, ``outcome``: here too), and so does
``on_run_state_changed``, which takes status.json's state from the screen's reader thread. The screen
provides ``paths``, ``live``, ``state``, ``status``, ``alerted``, ``pending``, ``clock``, ``history``,
``_seen_running``, ``_stats_dirty`` and ``_render_texts``.
"""
from __future__ import annotations

from typing import Optional

from textual import work

from zerotui.core.errors import ZeroTuiError
from zerotui.core.run.folder import send_control
from zerotui.core.run.settled import LIVE_STATES, launched_after, settled_state
from zerotui.tui.messages import RunResumeDone, RunStateChanged
from zerotui.tui.common.desktop import desktop_notify
from zerotui.tui.common.confirm import ConfirmScreen
from zerotui.tui.dashboard.run_log import RunLog


class RunControls:
    @property
    def finished(self) -> Optional[dict]:
        """The run_finished event that still stands, or None.

        It stands unless the run was launched again after it (core/run/settled.py, the rule `zerotui
        runs` uses too): `zerotui resume` writes "starting" at once, and the resumed worker's first event
        comes 20-160 s later (imports, DeepSpeed's initialise). Until then the stream still ends in the
        old run_finished, and showing that ("stopped", u to resume) would be false: a second resume is
        refused as "still starting"."""
        h = self.history
        if h is None or not h.finished or launched_after(self.status, h.finished):
            return None
        return h.finished

    @property
    def outcome(self) -> str:
        """The state shown: status.json's state settled by the stream's end, by the same function as
        `zerotui runs` (``core.run.settled.settled_state``)."""
        h = self.history
        return settled_state(self.state, self.status, h.finished if h is not None else None)

    def on_run_state_changed(self, message: RunStateChanged) -> None:
        message.stop()
        changed = message.state != self.state
        final = ("completed", "stopped", "failed", "lost")
        ended = changed and self._seen_running and message.state in final
        self._seen_running = self._seen_running or message.state not in final
        shown = self.outcome
        self.state, self.status = message.state, message.status
        self._stats_dirty = True
        # The keys follow the outcome, which status.json can move without a new state: a resumed run
        # is "starting" from the first read, and only its "launched" time (status) sets the old end aside.
        if self.outcome != shown:
            self.refresh_bindings()
        if ended:  # seen live, now over: worth a sound and a desktop notification
            desktop_notify(self.app, f"zerotui {self.paths.name}: {message.state}",
                           str(message.status.get("reason") or ""))

    def detach_note(self) -> str:
        """What the terminal says once the dashboard is gone: the screen is cleared on exit, and a
        silent exit reads as "the run was stopped"."""
        name = self.paths.name
        again = f"`zerotui attach {name}` comes back to it."
        if self.outcome in LIVE_STATES:
            return f"Detached from run {name}: it keeps training in the background. {again}"
        return f"Left run {name} ({self.outcome}). {again}"

    def action_detach(self) -> None:
        """Quit the UI; the worker runs in its own session and keeps training. The note is the App's
        result, printed by ``tui/launch.py`` after the screen is restored."""
        self.app.exit(self.detach_note())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> Optional[bool]:
        if action in ("pause_resume", "checkpoint", "stop", "stop_now"):
            return self.live and self.outcome in LIVE_STATES
        if action == "resume_run":
            return self.live and self.outcome in ("lost", "stopped", "failed")
        if action in ("chat", "chat_refused"):
            return (self.outcome in LIVE_STATES) == (action == "chat_refused")
        if action == "clear_alerts":
            return bool(self.alerted)
        if action == "pane":
            return self.has_class("-narrow")
        return True

    def _refused_read_only(self) -> bool:
        if not getattr(self.app, "read_only", False):
            return False
        self.notify("this dashboard is read-only: `zerotui serve --allow-control` lets a browser control runs",
                    title="control refused", severity="warning")
        self.query_one(RunLog).note(self.clock(), "control refused: read-only dashboard")
        return True

    def _control(self, command: str) -> None:
        if self._refused_read_only():
            return
        try:
            entry = send_control(self.paths, command, by="dashboard")
        except ZeroTuiError as err:
            self.notify(err.one_line(), title=f"{command} not sent", severity="error", markup=False)
            return
        self.pending[str(entry["id"])] = command
        self.query_one(RunLog).note(self.clock(), f"{command} sent to the worker")
        self._stats_dirty = True
        self._render_texts()

    def action_pause_resume(self) -> None:
        self._control("resume" if self.outcome == "paused" else "pause")

    def action_checkpoint(self) -> None:
        self._control("checkpoint")

    def action_stop(self) -> None:
        if self._refused_read_only():
            return

        def answer(yes: Optional[bool]) -> None:
            if yes:
                self._control("stop")
        self.app.push_screen(ConfirmScreen(
            "Stop the run?", "The worker writes a checkpoint, then exits. `zerotui resume` continues it "
            "later from that checkpoint.", yes="Stop"), answer)

    def action_stop_now(self) -> None:
        if self._refused_read_only():
            return
        ck = self.history.last_checkpoint if self.history else None
        since = f"step {ck.get('step')}" if ck else "the start (there is no checkpoint yet)"

        def answer(yes: Optional[bool]) -> None:
            if yes:
                self._control("stop-now")
        self.app.push_screen(ConfirmScreen(
            "Stop now, without a checkpoint?", f"Training since {since} is lost; the worker exits at the "
            "next step.", yes="Stop now"), answer)

    def action_resume_run(self) -> None:
        if self._refused_read_only():
            return

        def answer(yes: Optional[bool]) -> None:
            if yes:
                self.resume_worker()
        self.app.push_screen(ConfirmScreen(
            "Resume this run?", "A new worker starts from the run's newest complete checkpoint and "
            "appends to the same event stream.", yes="Resume"), answer)

    @work(thread=True, exclusive=True, exit_on_error=False, group="dashboard-resume",
          description="resume the run")
    def resume_worker(self) -> None:
        self.post_message(RunResumeDone.after_resume(self.paths))

