"""Reading a run's ``events.jsonl`` into a ``RunHistory`` fast, and following it as it grows.

A 32-hour run's file holds ~320,000 lines (110 MB). ``load_history``:

* reads 4 MiB chunks, so memory stays flat whatever the file size;
* decodes with orjson and builds numpy columns in bulk (``core.events.columns``) instead of per-event
  Python work;
* on files over ``PARALLEL_MIN_BYTES`` hands the first part to a helper process
  (``python -m zerotui.core.events.reader``) while this thread parses the rest: decoding holds the GIL,
  so a second process is the only way to use a second core, and the UI's own process then has the
  other core to itself. Both parts are ingested in file order, so the result is the same as reading the
  file in one pass; a helper that fails is replaced by parsing its part here.

Measured on a 32-hour synthetic run: ``benchmarks/results/dashboard-long-run.json``.

``EventFollower`` continues from where ``load_history`` stopped and says when the caller must rebuild
instead of ingesting: the file was truncated (events would count twice), or a resumed worker redid steps
already read (``core/events/superseded.py``: the history must drop the first reports).
"""
from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.events.columns import Parsed, decode_lines, parse_events
from zerotui.core.events.stream import read_lines, whole_lines_end
from zerotui.core.events.history import RunHistory
from zerotui.core.events.superseded import drop_superseded
from zerotui.core.safe_read import open_file

CHUNK_BYTES = 4 << 20
#: Below this a helper process costs more (≈0.2 s to start Python with numpy) than it saves.
PARALLEL_MIN_BYTES = 24 << 20
#: The helper starts later than this thread (interpreter start-up), so it gets a bit less than half.
HELPER_SHARE = 0.45

Cancelled = Optional[Callable[[], bool]]


def parse_range(path: Path | str, start: int, end: int, chunk_bytes: int = CHUNK_BYTES,
                cancelled: Cancelled = None) -> list[Parsed]:
    """Parse the whole lines of bytes [start, end) (``start`` at a line start, ``end`` after a newline)."""
    out: list[Parsed] = []
    with open_file(path, follow=False) as fh:
        fh.seek(start)
        pos, carry = start, b""
        while pos < end and (cancelled is None or not cancelled()):
            chunk = fh.read(min(chunk_bytes, end - pos))
            if not chunk:
                break
            pos += len(chunk)
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n")
            if cut < 0:
                carry = buf
                continue
            carry = buf[cut + 1:]
            out.append(parse_events(decode_lines(buf[:cut + 1])))
    return out


def _line_start_after(path: Path | str, offset: int) -> int:
    with open_file(path, follow=False) as fh:
        fh.seek(offset)
        rest = fh.readline()
    return offset + len(rest)


def _start_helper(path: Path | str, start: int, end: int) -> Optional[subprocess.Popen]:
    try:
        return subprocess.Popen([sys.executable, "-m", "zerotui.core.events.reader", str(path), str(start),
                                 str(end)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, close_fds=True)
    except OSError:
        return None


def _helper_result(proc: Optional[subprocess.Popen]) -> Optional[list[Parsed]]:
    """What the helper parsed, or None when it failed (the caller then parses that part itself)."""
    if proc is None:
        return None
    try:
        assert proc.stdout is not None
        data = proc.stdout.read()
        proc.wait(timeout=30)
        if proc.returncode != 0:
            return None
        result = pickle.loads(data)  # our own child's output, produced by this module
        return result if isinstance(result, list) else None
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, subprocess.TimeoutExpired):
        proc.kill()
        return None


def load_history(path: Path | str, history: Optional[RunHistory] = None, chunk_bytes: int = CHUNK_BYTES,
                 cancelled: Cancelled = None, parallel: Optional[bool] = None) -> tuple[RunHistory, int]:
    """Read a whole events file; returns the history and the byte offset to follow from.

    ``parallel``: None decides by size, False never starts a helper. A missing file gives an empty
    history (a run that has not written its first event yet)."""
    history = history or RunHistory()
    try:
        st = os.lstat(path)
    except OSError:
        return history, 0
    if not stat.S_ISREG(st.st_mode):  # a symlink out of the run folder, a FIFO: nothing of this run's
        return history, 0
    size = st.st_size
    end = whole_lines_end(path, size)  # a torn last line is left for the follower
    use_helper = parallel if parallel is not None else end >= PARALLEL_MIN_BYTES
    cut = _line_start_after(path, int(end * HELPER_SHARE)) if use_helper and end > 0 else 0
    helper = _start_helper(path, 0, cut) if cut > 0 else None
    if helper is None:
        cut = 0
    mine = parse_range(path, cut, end, chunk_bytes, cancelled)
    if helper is not None and cancelled is not None and cancelled():
        helper.kill()
    first = _helper_result(helper) if helper is not None else []
    if first is None:  # the helper failed: read its part here
        first = parse_range(path, 0, cut, chunk_bytes, cancelled)
    until = _last_time(path, end)
    batches = first + mine
    history.superseded += drop_superseded(batches)
    for parsed in batches:
        if cancelled is not None and cancelled():
            break
        history.ingest(parsed, until)
    return history, end


def _last_time(path: Path | str, end: int) -> Optional[float]:
    """The time of the newest event among the last whole lines before ``end`` (None if unreadable)."""
    with open_file(path, follow=False) as fh:
        fh.seek(max(0, end - 65536))
        tail = fh.read(end - max(0, end - 65536))
    times = [ev.get("t") for ev in decode_lines(tail[tail.find(b"\n") + 1:] if end > 65536 else tail)
             if isinstance(ev, dict)]
    times = [t for t in times if isinstance(t, (int, float)) and not isinstance(t, bool)]
    return float(max(times)) if times else None


class EventFollower:
    """New whole events after ``offset``; ``poll`` asks for a rebuild instead of returning events that
    cannot be ingested on top of what was read (a truncated file, a resume that redid steps)."""

    def __init__(self, path: Path | str, offset: int = 0) -> None:
        self.path = Path(path)
        self.offset = offset
        self._last_step: Optional[float] = None  # newest step read so far (None: not looked up yet)

    def poll(self, max_bytes: int = CHUNK_BYTES) -> tuple[list[Any], bool]:
        """(events, rebuild). When rebuild is True the offset is reset to 0 and the caller must read the
        whole file again (``load_history``): it was truncated (also when it grew back past the offset
        before this poll), or a ``run_started`` in it resumes from a step before steps already returned."""
        blob, offset, restarted = read_lines(self.path, self.offset, max_bytes)
        if restarted:  # truncated, or cut and grown back (docs/reliability.md, "truncated")
            self.offset, self._last_step = 0, None
            return [], True
        if not blob:
            return [], False
        events = decode_lines(blob)
        if self._supersedes(events):
            self.offset, self._last_step = 0, None
            return [], True
        self.offset = offset
        return events, False

    def _supersedes(self, events: list[Any]) -> bool:
        """Whether a resume among ``events`` redoes steps read before it (the rest updates the newest step)."""
        for ev in events:
            if not isinstance(ev, dict):
                continue
            kind, step = ev.get("type"), ev.get("step")
            if kind == "step" and isinstance(step, (int, float)):
                self._last_step = float(step)
            elif kind == "run_started" and isinstance(ev.get("start_step"), (int, float)):
                if self._last_step is None:
                    self._last_step = _last_step_before(self.path, self.offset)
                if self._last_step is not None and self._last_step > ev["start_step"]:
                    return True
        return False


def _last_step_before(path: Path, offset: int, window: int = 1 << 20) -> float:
    """The newest step event in the MiB before ``offset`` (0.0 when none: nothing to supersede)."""
    with open_file(path, follow=False) as fh:
        fh.seek(max(0, offset - window))
        blob = fh.read(offset - max(0, offset - window))
    for ev in reversed(decode_lines(blob[blob.find(b"\n") + 1:] if offset > window else blob)):
        if isinstance(ev, dict) and ev.get("type") == "step" and isinstance(ev.get("step"), (int, float)):
            return float(ev["step"])
    return 0.0


def _helper_main(argv: list[str]) -> int:
    """``python -m zerotui.core.events.reader PATH START END``: pickled ``list[Parsed]`` on stdout."""
    path, start, end = argv[0], int(argv[1]), int(argv[2])
    sys.stdout.buffer.write(pickle.dumps(parse_range(path, start, end), protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_helper_main(sys.argv[1:]))
