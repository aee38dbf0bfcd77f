"""The event stream: one JSON object per line in a run's ``events.jsonl``.

It is the single source of truth for every client (dashboard, ``zerotui runs``, scripts). Writers append
whole lines and flush each one (a writer that finds the last line torn by a crash ends it first); readers
skip a torn last line and ignore types they do not know, so an old dashboard can read a newer worker's
stream and vice versa.

Every event has ``v`` (schema version), ``t`` (unix time, float) and ``type``. The fields each type must
carry are listed in ``REQUIRED``; extra fields are allowed (they are how the schema grows).
"""
from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any, Optional

from zerotui.core.safe_read import InputFileError, open_file

SCHEMA_VERSION = 1

#: Fields every event of a type must carry (beyond v, t, type). Values may be null where a number is
#: unknown (e.g. ``loss_scale`` with bf16, ``grad_norm`` before the first step).
REQUIRED: dict[str, tuple[str, ...]] = {
    "run_started": ("plan", "hardware", "world_size", "total_steps"),
    "phase": ("name", "done", "total"),
    "step": ("step", "epoch", "loss", "lr", "grad_norm", "loss_scale", "skipped", "samples_per_s",
             "tokens_per_s", "tflops", "step_time"),
    "eval": ("step", "loss"),
    "telemetry": ("gpus", "cpu_percent", "ram_used", "ram_total", "rss"),
    "checkpoint": ("step", "path"),
    "alert": ("kind", "message", "hint"),
    "log": ("message",),
    "control_ack": ("command", "ok"),
    "run_finished": ("state", "reason"),
}

RUN_STATES_FINAL = ("completed", "stopped", "failed")


def make_event(type_: str, t: Optional[float] = None, **fields: Any) -> dict[str, Any]:
    """Build an event dict; raises ValueError when a required field is missing (a programming error)."""
    missing = [k for k in REQUIRED.get(type_, ()) if k not in fields]
    if missing:
        raise ValueError(f"{type_} event lacks {', '.join(missing)}")
    return {"v": SCHEMA_VERSION, "t": time.time() if t is None else t, "type": type_, **fields}


def _clean(value: Any) -> Any:
    """JSON has no NaN/Infinity: non-finite floats become strings so the line stays valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def encode(event: dict[str, Any]) -> str:
    return json.dumps(_clean(event), separators=(",", ":"), default=str) + "\n"


def as_float(value: Any) -> Optional[float]:
    """Read a numeric event field back: numbers, null, or the strings 'nan'/'inf'/'-inf'."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def validate(event: Any) -> list[str]:
    """Problems with one decoded event (empty when it follows the schema)."""
    if not isinstance(event, dict):
        return ["not an object"]
    problems = []
    if event.get("v") != SCHEMA_VERSION:
        problems.append(f"v is {event.get('v')!r}, expected {SCHEMA_VERSION}")
    if not isinstance(event.get("t"), (int, float)):
        problems.append("t is not a number")
    type_ = event.get("type")
    if type_ not in REQUIRED:
        problems.append(f"unknown type {type_!r}")
        return problems
    problems += [f"{type_} lacks {k}" for k in REQUIRED[type_] if k not in event]
    if type_ == "run_finished" and event.get("state") not in RUN_STATES_FINAL:
        problems.append(f"run_finished state {event.get('state')!r} not in {RUN_STATES_FINAL}")
    return problems


class EventWriter:
    """Appends events to a file, one flushed line each. Safe to use from several threads."""

    def __init__(self, path: Path | str, fsync: bool = False) -> None:
        import threading

        self.path = Path(path)
        self._fsync = fsync
        self._lock = threading.Lock()
        # Line-buffered text append: each write lands as one write() of a whole line. O_NOFOLLOW, O_NONBLOCK
        # and a regular-file check: events go into the run folder's own file, never through a symlink to
        # another file, and a FIFO planted there fails here instead of blocking the worker in open().
        fd = _open_append(self.path)
        try:
            _end_torn_line(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fh = os.fdopen(fd, "a", encoding="utf-8", buffering=1)

    def emit(self, type_: str, **fields: Any) -> dict[str, Any]:
        event = make_event(type_, **fields)
        self.write(event)
        return event

    def write(self, event: dict[str, Any]) -> None:
        line = encode(event)
        with self._lock:
            if self._fh.closed:
                return
            self._fh.write(line)
            self._fh.flush()
            if self._fsync:
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()

    def __enter__(self) -> "EventWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _open_append(path: Path) -> int:
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputFileError(path, "is not a regular file (a FIFO or a device); events go only into the "
                             "run folder's own events.jsonl")
    os.set_blocking(fd, True)
    return fd


def _end_torn_line(fd: int, path: Path) -> None:
    """End the file's last line if a writer died in the middle of it (kill -9 of a long line, a full disk).
    The next event would be glued to the fragment and lost to every reader with it: the resumed worker's
    first phase, or the supervisor's run_finished. One writer at a time (the module docstring), so no line
    is being written now; the fragment becomes a line of its own, which readers skip."""
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return
        with open_file(path, follow=False) as fh:
            fh.seek(size - 1)
            torn = fh.read(1) != b"\n"
        if torn:
            os.write(fd, b"\n")
    except OSError:  # unreadable to us, or a full disk: the events go in as they did before this check,
        return       # and the emit that follows meets the same disk


def whole_lines_end(path: Path | str, size: Optional[int] = None) -> int:
    """Where the whole lines of the file (its first ``size`` bytes) end: just after the last newline; 0
    when there is none, or no file to read.

    Where to start following a file to see only what is written next. Not its size: after a torn last
    line that is the middle of a line, which ``read_lines`` takes for a file cut and grown back, and
    reads again from its start, every event of the run shown a second time."""
    try:
        fh = open_file(path, follow=False)
    except OSError:
        return 0
    with fh:
        pos = os.fstat(fh.fileno()).st_size if size is None else size
        while pos > 0:
            step = min(65536, pos)
            fh.seek(pos - step)
            nl = fh.read(step).rfind(b"\n")
            if nl >= 0:
                return pos - step + nl + 1
            pos -= step
    return 0


def read_lines(path: Path | str, offset: int = 0, max_bytes: Optional[int] = None) -> tuple[bytes, int, bool]:
    """The whole lines appended after byte ``offset``: (their bytes, the offset to go on from, restarted).

    The one way zerotui reads a growing events file. A last line without its newline is a write in
    progress (or torn by a crash): it is left for the next call. ``restarted`` is True when the file no
    longer continues at ``offset`` — it shrank below it, or was cut and grew back past it (the byte before
    ``offset`` no longer ends a line) — and the bytes then come from the file's start.
    """
    p = Path(path)
    try:
        fh = open_file(p, follow=False)  # the run folder's own regular file: never a link out, never a FIFO
    except OSError:  # missing (not started yet), or not a file to read: nothing to read, as before
        return b"", offset, False
    with fh:
        return _read_lines(fh, offset, max_bytes)


def _read_lines(fh: Any, offset: int, max_bytes: Optional[int]) -> tuple[bytes, int, bool]:
    size = os.fstat(fh.fileno()).st_size
    restarted = False
    if size < offset:
        offset, restarted = 0, True
    if size == offset:
        return b"", offset, restarted
    want = -1 if max_bytes is None else max_bytes
    if offset:
        fh.seek(offset - 1)
        if fh.read(1) != b"\n":  # another file now: read it from the start
            offset, restarted = 0, True
            fh.seek(0)
    chunk = fh.read(want)
    end = chunk.rfind(b"\n")
    if end < 0:
        return b"", offset, restarted
    return chunk[: end + 1], offset + end + 1, restarted


def read_new(path: Path | str, offset: int = 0, max_bytes: Optional[int] = None) -> tuple[list[dict], int]:
    """Events appended after byte ``offset``, and the offset to resume from (``read_lines``; a file that
    was truncated is read again from its start). Lines that are not JSON objects are skipped."""
    blob, offset, _ = read_lines(path, offset, max_bytes)
    events = []
    for raw in blob.splitlines():
        if not raw.strip():
            continue
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if isinstance(ev, dict) and "type" in ev:
            events.append(ev)
    return events, offset


def read_end(path: Path | str, nbytes: int, tail: bool) -> list[dict]:
    """The whole events in the first (``tail=False``) or last ``nbytes`` of the file: a list of runs must
    appear at once even when a 32-hour run's file is over 100 MB. Undecodable lines are skipped."""
    try:
        with open_file(path, follow=False) as fh:
            if tail:
                fh.seek(0, 2)
                size = fh.tell()
                fh.seek(max(0, size - nbytes))
                blob = fh.read()
                if size > nbytes:  # the first line is probably cut: drop it
                    blob = blob[blob.find(b"\n") + 1:]
            else:
                blob = fh.read(nbytes)
    except OSError:
        return []
    out = []
    for raw in blob[: blob.rfind(b"\n") + 1].splitlines():
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


def read_all(path: Path | str) -> list[dict]:
    events, _ = read_new(path, 0)
    return events
