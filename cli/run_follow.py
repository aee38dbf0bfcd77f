"""Watching a run from the command line: event lines, acknowledgements, and the end of a run.

Shared by `zerotui train --foreground`, `zerotui resume --foreground` and `zerotui stop --wait`. It reads
only the run folder (events.jsonl, status.json), like every other client.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Optional, TextIO

from zerotui.core.events.stream import as_float, read_new
from zerotui.core.run.folder import RunPaths, run_state, send_control

POLL_S = 0.3


def _num(value: Any, fmt: str) -> str:
    f = as_float(value)
    return "-" if f is None else format(f, fmt)


def format_event(ev: dict[str, Any], total_steps: Optional[int] = None) -> Optional[str]:
    """One line for a person, or None for events not worth a line (telemetry)."""
    kind = ev.get("type")
    if kind == "step":
        of = f"/{total_steps}" if total_steps else ""
        line = (f"step {ev.get('step')}{of}  loss {_num(ev.get('loss'), '.4f')}  lr {_num(ev.get('lr'), '.2e')}"
                f"  tok/s {_num(ev.get('tokens_per_s'), ',.0f')}  step {_num(ev.get('step_time'), '.2f')}s")
        if ev.get("loss_scale") is not None:
            line += f"  scale {_num(ev.get('loss_scale'), 'g')}"
        return line
    if kind == "phase":
        done, total = ev.get("done"), ev.get("total")
        count = f" {done}/{total}" if done is not None and total else ""
        return f"[{ev.get('name')}{count}]"
    if kind == "run_started":
        resumed = ev.get("resumed_from")
        extra = f", resumed from {resumed}" if resumed not in (None, "") else ""
        return f"run started: {ev.get('total_steps')} steps, world size {ev.get('world_size')}{extra}"
    if kind == "eval":
        return f"eval at step {ev.get('step')}: loss {_num(ev.get('loss'), '.4f')}"
    if kind == "checkpoint":
        return f"checkpoint at step {ev.get('step')}: {ev.get('path')}"
    if kind == "alert":
        hint = f" ({ev.get('hint')})" if ev.get("hint") else ""
        return f"ALERT {ev.get('kind')}: {ev.get('message')}{hint}"
    if kind == "log":
        return str(ev.get("message"))
    if kind == "control_ack":
        verdict = "done" if ev.get("ok") else "refused"
        return f"{ev.get('command')}: {verdict}, {ev.get('message', '')}".rstrip(", ")
    if kind == "run_finished":
        return f"run {ev.get('state')}: {ev.get('reason')}"
    return None


def events_end(paths: RunPaths) -> int:
    """Where events.jsonl's whole lines end now: follow from here to see only what happens next. Not the
    file's size: after a torn last line (a writer killed mid-line) that is inside a line, which the
    follower takes for a rewritten file and reads again from the start."""
    from zerotui.core.events.stream import whole_lines_end

    return whole_lines_end(paths.events)


class EventCursor:
    """Reads a run's events from an offset, one at a time, so nothing after a match is skipped."""

    def __init__(self, paths: RunPaths, offset: int = 0) -> None:
        self.paths = paths
        self.offset = offset
        self._pending: list[dict] = []

    def _fill(self) -> bool:
        if not self._pending:
            events, self.offset = read_new(self.paths.events, self.offset)
            self._pending.extend(events)
        return bool(self._pending)

    def wait_for(self, match: Callable[[dict], bool], timeout: Optional[float] = None,
                 on_event: Optional[Callable[[dict], None]] = None) -> Optional[dict]:
        """The first event that matches, None at the timeout, or {"type": "lost"} when the worker is gone."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last_check = time.monotonic()
        while True:
            while self._fill():
                ev = self._pending.pop(0)
                if on_event:
                    on_event(ev)
                if match(ev):
                    return ev
            if deadline is not None and time.monotonic() >= deadline:
                return None
            if time.monotonic() - last_check > 2.0:
                last_check = time.monotonic()
                # The worker may have written its last events just before it went away: read once more.
                if run_state(self.paths) == "lost" and not self._fill():
                    return {"type": "lost"}
                continue
            time.sleep(POLL_S)


def finished_problem(paths: RunPaths, ev: dict) -> str | None:
    """What went wrong with a run's end, as one line, or None when it completed or was stopped."""
    if ev.get("type") == "lost":
        return (f"the worker of {paths.name} is gone without finishing "
                f"(killed? see {paths.log}); `zerotui resume {paths.name}` continues it")
    if ev.get("state") == "failed":
        return f"run {paths.name} failed: {ev.get('reason')} (log: {paths.log})"
    return None


def finished_exit_code(paths: RunPaths, ev: dict, err: Optional[TextIO] = None) -> int:
    # the stream is looked up at the call, not bound at import: whoever replaced sys.stderr since
    # (a test's capture, a redirect) gets the line, and a closed stream from then is never written
    problem = finished_problem(paths, ev)
    if problem is not None:
        (err or sys.stderr).write(f"zerotui: {problem}\n")
        return 1
    return 0


def follow_run(paths: RunPaths, offset: int = 0, out: Optional[TextIO] = None,
               seen: dict[str, Any] | None = None) -> int:
    """Print the run's events until it ends. Ctrl-C: graceful stop, again: stop now, a third: detach.

    ``seen`` (for --json) collects the run's end as it went by: ``total_steps``, the last ``step`` event
    and the ``end`` (run_finished, or {"type": "lost"})."""
    out = out or sys.stdout  # at the call (finished_exit_code says why)
    total: dict[str, Any] = {"steps": None}
    seen = {} if seen is None else seen

    def show(ev: dict) -> None:
        if ev.get("type") == "run_started":
            total["steps"] = seen["total_steps"] = ev.get("total_steps")
        if ev.get("type") == "step":
            seen["step"] = ev
        line = format_event(ev, total["steps"])
        if line is not None and ev.get("type") != "run_finished":
            out.write(line + "\n")
            out.flush()

    cursor = EventCursor(paths, offset)
    previous = _detach_on_sigterm(paths)
    try:
        return _follow(paths, cursor, show, out, seen)
    finally:
        if previous is not None:
            import signal

            signal.signal(signal.SIGTERM, previous)


def _follow(paths: RunPaths, cursor: Any, show: Callable[[dict], None], out: TextIO, seen: dict[str, Any]) -> int:
    interrupts = 0
    while True:
        try:
            ev = cursor.wait_for(lambda e: e.get("type") in ("run_finished", "lost"), None, show)
            break
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts == 1:
                send_control(paths, "stop", by="zerotui --foreground (Ctrl-C)")
                out.write("\nstopping gracefully: a checkpoint first (Ctrl-C again stops at once, "
                          "without one)\n")
            elif interrupts == 2:
                send_control(paths, "stop-now", by="zerotui --foreground (Ctrl-C twice)")
                out.write("\nstopping at the next step, without a checkpoint (Ctrl-C again detaches)\n")
            else:
                out.write("\ndetached; the run keeps stopping in the background: zerotui runs\n")
                return 130
            out.flush()
    assert ev is not None
    seen["end"] = ev
    if ev.get("type") == "run_finished" and ev.get("state") != "failed":  # failures go to stderr below
        out.write(format_event(ev) + "\n")
        out.flush()
    return finished_exit_code(paths, ev)


def _detach_on_sigterm(paths: RunPaths) -> Any:
    """SIGTERM to a --foreground client (`timeout`, a session manager) ends only the client; the run goes
    on detached, as it does after SIGHUP. Say so, instead of vanishing without a word."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def detach(_signum: int, _frame: Any) -> None:
        sys.stderr.write(f"\nzerotui: detached (SIGTERM); the run goes on in the background: "
                         f"`zerotui attach {paths.name}`, or `zerotui stop {paths.name}`\n")
        sys.stderr.flush()
        os._exit(143)

    return signal.signal(signal.SIGTERM, detach)  # the handler it replaces, put back when following ends
