"""Notifications that reach the user with nothing attached: the run's supervisor posts each alert and the
run's end to the URL the plan names (``notify_url``), retrying while the server is unreachable.

Why the supervisor: it outlives the worker (a killed worker's end is known only there: ``run_finished``
has one writer, the supervisor), it is not the training process (a slow or dead server can never slow a
step), and it follows ``events.jsonl`` like every other client, so what is notified is exactly what the
dashboard shows.

Formats: ``ntfy`` — a POST whose body is the message, with ``Title``, ``Tags`` and ``Priority`` headers
(ntfy.sh or a self-hosted ntfy server take it as is, and most webhook receivers accept a text POST);
``json`` — a POST of ``{"run", "event", "kind", "state", "title", "message", "t"}``. Plain urllib: the
two formats need nothing more, and the retry policy must be ours (apprise's sends are one-shot).

Once each: ``notify.json`` in the run folder holds the byte offset in ``events.jsonl`` up to which every
message was delivered; it moves only after a delivery, so a message is retried until it is delivered
(or the supervisor gives up after ``FLUSH_S`` at the run's end, saying so in its log), and a resumed
run's new supervisor carries on where the old one stopped, resending nothing.
"""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.atomic import atomic_write_json
from zerotui.core.events.stream import read_lines

#: Seconds between looks at events.jsonl (the notification delay is about half of it).
POLL_S = 0.5
#: Retry delays after a failed delivery: doubling from 2 s to at most 60 s.
RETRY_FIRST_S, RETRY_MAX_S = 2.0, 60.0
#: How long the supervisor keeps retrying after the run ended before giving the rest up.
FLUSH_S = 900.0
HTTP_TIMEOUT_S = 10.0
STATE_FILE = "notify.json"


@dataclass(frozen=True)
class Message:
    title: str
    body: str
    tags: str           # ntfy tags (emoji short codes)
    priority: str       # ntfy priority: default | high | urgent
    fields: dict        # the JSON format's object


def message_for(event: dict[str, Any], run: str) -> Optional[Message]:
    """The notification an event deserves, or None (only alerts and the run's end are worth one)."""
    kind = event.get("type")
    if kind == "alert":
        what = str(event.get("kind") or "alert")
        body = str(event.get("message") or "")
        if event.get("hint"):
            body += f"\n{event['hint']}"
        return Message(f"zerotui {run}: alert ({what})", body, "warning", "high",
                       {"run": run, "event": "alert", "kind": what, "state": None, "title": f"alert: {what}",
                        "message": body, "t": event.get("t")})
    if kind == "run_finished":
        state = str(event.get("state") or "finished")
        body = f"{state} at step {event.get('step')}: {event.get('reason') or ''}".strip()
        return Message(f"zerotui {run}: {state}", body,
                       {"completed": "white_check_mark", "stopped": "stop_sign"}.get(state, "x"),
                       "default" if state in ("completed", "stopped") else "urgent",
                       {"run": run, "event": "run_finished", "kind": None, "state": state, "title": state,
                        "message": body, "t": event.get("t")})
    return None


def send(url: str, fmt: str, msg: Message, timeout: float = HTTP_TIMEOUT_S) -> None:
    """One POST; raises OSError (URLError, HTTPError, timeouts) when it was not accepted."""
    if fmt == "json":
        data = json.dumps(msg.fields).encode()
        headers = {"Content-Type": "application/json"}
    else:
        data = msg.body.encode()
        # HTTP headers are latin-1: a title with other characters goes as ntfy's RFC 2047 form would be
        # overkill; replace them instead (the body carries the full text).
        headers = {"Title": msg.title.encode("latin-1", "replace").decode("latin-1"), "Tags": msg.tags,
                   "Priority": msg.priority, "Content-Type": "text/plain; charset=utf-8"}
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's own URL, http(s) only
        if resp.status >= 300:
            raise urllib.error.HTTPError(url, resp.status, "not accepted", resp.headers, None)


class Notifier:
    """Follows a run's events and delivers their messages in order, on its own thread."""

    def __init__(self, events: Path, state: Path, run: str, url: str, fmt: str,
                 log: Callable[[str], None], sender: Callable[[str, str, Message], None] = send) -> None:
        self.events, self.state, self.run, self.url, self.fmt = events, state, run, url, fmt
        self.log, self.sender = log, sender
        self.delivered = self._load_offset()
        self.read_to = self.delivered
        self.queue: list[tuple[int, Message]] = []   # (offset after its event's line, message)
        self._stop = threading.Event()
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zerotui-notify", daemon=True)

    def _load_offset(self) -> int:
        try:
            return int(json.loads(self.state.read_text()).get("offset", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            # First supervisor of this run with notifications: only what happens from now on.
            try:
                return self.events.stat().st_size
            except OSError:
                return 0

    def start(self) -> None:
        self._thread.start()

    def _read(self) -> None:
        chunk, end, restarted = read_lines(self.events, self.read_to)
        if restarted:  # the file was replaced: its offsets mean nothing now
            self.queue, self.delivered, start = [], 0, 0
        else:
            start = self.read_to
        pos = start
        for line in chunk.splitlines(keepends=True):
            pos += len(line)
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            msg = message_for(ev, self.run) if isinstance(ev, dict) else None
            if msg is not None:
                self.queue.append((pos, msg))
        self.read_to = end
        if not self.queue:
            self._save(end)

    def _save(self, offset: int) -> None:
        if offset == self.delivered:
            return
        self.delivered = offset
        try:
            atomic_write_json(self.state, {"offset": offset})
        except OSError:
            pass  # a full disk: at worst a message is sent again by a later supervisor

    def _run(self) -> None:
        delay = RETRY_FIRST_S
        failing_since: Optional[float] = None
        while not self._stop.is_set():
            self._read()
            while self.queue and not self._stop.is_set():
                offset, msg = self.queue[0]
                try:
                    self.sender(self.url, self.fmt, msg)
                except Exception as err:  # noqa: BLE001 - any failure is retried; it never leaves this thread
                    if failing_since is None:
                        failing_since = time.monotonic()
                        self.log(f"notification to {self.url} failed ({str(err)[:160]}); retrying")
                    self._stop.wait(delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                if failing_since is not None:
                    self.log(f"notifications delivered again after {time.monotonic() - failing_since:.0f} s")
                failing_since, delay = None, RETRY_FIRST_S
                self.queue.pop(0)
                self._save(offset if self.queue else max(offset, self.read_to))
            if self._ended.is_set() and not self.queue and self.read_to >= _size(self.events):
                return
            self._stop.wait(POLL_S)

    def finish(self, timeout: float = FLUSH_S) -> bool:
        """The run has ended: deliver what is left (within ``timeout``); True when nothing was given up."""
        self._ended.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(HTTP_TIMEOUT_S + 1)
            self.log(f"{len(self.queue)} notification(s) to {self.url} not delivered after {timeout:.0f} s")
            return False
        return True


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def notifier_for(paths: Any, plan: Any, log: Callable[[str], None]) -> Optional[Notifier]:
    """The run's notifier when its plan names a URL, else None."""
    url = getattr(plan, "notify_url", None)
    if not url:
        return None
    return Notifier(Path(paths.events), Path(paths.root) / STATE_FILE, Path(paths.root).name, str(url),
                    str(getattr(plan, "notify_format", "ntfy")), log)
