"""Notifications from the run's supervisor (core/run/notify.py): each alert and the run's end delivered
once, in order, none lost while the server is down for a while, nothing resent by a later supervisor."""
from __future__ import annotations

import http.server
import json
import socket
import threading
import time

from run_events import events
from worker_runs import finish, make_run, start_worker

from zerotui.core.events.stream import EventWriter
from zerotui.core.run.notify import Notifier, message_for


def _write(path, *evs):
    with EventWriter(path) as w:
        for type_, fields in evs:
            w.emit(type_, **fields)


def test_each_message_is_delivered_once_in_order_through_failures_and_a_new_supervisor(tmp_path, monkeypatch):
    import zerotui.core.run.notify as notify

    monkeypatch.setattr(notify, "RETRY_FIRST_S", 0.05)
    monkeypatch.setattr(notify, "POLL_S", 0.05)
    ev, state = tmp_path / "events.jsonl", tmp_path / "notify.json"
    ev.write_text("")
    sent, fail = [], {"left": 3}

    def sender(url, fmt, msg):
        if fail["left"]:
            fail["left"] -= 1
            raise OSError("connection refused")
        sent.append(msg.title)

    logs: list[str] = []
    n = Notifier(ev, state, "r1", "http://x/y", "ntfy", logs.append, sender)
    n.start()
    _write(ev, ("log", {"message": "started"}), ("alert", {"kind": "stall", "message": "no step", "hint": "h"}),
           ("log", {"message": "x"}), ("alert", {"kind": "disk", "message": "full", "hint": "free space"}),
           ("run_finished", {"state": "failed", "reason": "boom", "step": 3}))
    assert n.finish(timeout=20)
    assert sent == ["zerotui r1: alert (stall)", "zerotui r1: alert (disk)", "zerotui r1: failed"]
    assert any("failed" in line and "retrying" in line for line in logs)
    assert json.loads(state.read_text())["offset"] == ev.stat().st_size
    # A resumed run's new supervisor: what was delivered is not sent again; what is new is.
    again = Notifier(ev, state, "r1", "http://x/y", "ntfy", logs.append, sender)
    again.start()
    _write(ev, ("alert", {"kind": "host_ram", "message": "swap", "hint": "h"}))
    assert again.finish(timeout=20)
    assert sent[3:] == ["zerotui r1: alert (host_ram)"]


def test_only_alerts_and_the_end_make_messages():
    assert message_for({"type": "step", "step": 3}, "r") is None
    m = message_for({"type": "run_finished", "state": "completed", "step": 9, "reason": "reached step 9"}, "r")
    assert m.title == "zerotui r: completed" and "step 9" in m.body and m.fields["state"] == "completed"


class _Hook(http.server.BaseHTTPRequestHandler):
    got: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).got.append((time.time(), self.headers.get("Content-Type"), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


def test_a_real_run_notifies_a_local_server_that_comes_up_late(tmp_path):
    """The supervisor of a real (helper) worker run that hits an out-of-memory: the server is down for the
    first seconds, then every message arrives once; JSON format."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _Hook.got = []
    paths = make_run(tmp_path, notify_url=f"http://127.0.0.1:{port}/hook", notify_format="json", max_steps=8)
    proc = start_worker(paths, ZEROTUI_TEST_FAIL="oom", ZEROTUI_TEST_FAIL_STEP="3")
    time.sleep(4)  # the OOM alert is written meanwhile; its POST is refused until the server listens
    server = http.server.HTTPServer(("127.0.0.1", port), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        end = finish(proc, paths, timeout=120)
    finally:
        server.shutdown()
    assert end["finished"]["state"] == "failed"
    got = [json.loads(body) for _, ctype, body in _Hook.got]
    assert all(ctype == "application/json" for _, ctype, _ in _Hook.got)
    want = [("alert", e["kind"]) for e in events(paths, "alert")] + [("run_finished", None)]
    assert [(g["event"], g["kind"]) for g in got] == want and ("alert", "oom") in want
    assert got[-1]["state"] == "failed" and got[-1]["run"] == paths.name
