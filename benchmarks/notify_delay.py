"""Notification delay, event written -> delivered: the supervisor's Notifier (core/run/notify.py) following
an events file, posting to a local HTTP server (ntfy format), 20 alerts written 1.3 s apart.

    python -m benchmarks.notify_delay [--out benchmarks/results/notify-delay.json]
"""
from __future__ import annotations

import argparse
import http.server
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from zerotui.core.events.stream import EventWriter
from zerotui.core.run.notify import POLL_S, Notifier


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--n", type=int, default=20)
    a = ap.parse_args()
    got: list[tuple[float, str]] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            got.append((time.time(), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tmp = Path(tempfile.mkdtemp(prefix="zt-notify-"))
    events = tmp / "events.jsonl"
    events.write_text("")
    n = Notifier(events, tmp / "notify.json", "bench", f"http://127.0.0.1:{server.server_port}/t", "ntfy", print)
    n.start()
    written = {}
    with EventWriter(events) as w:
        for i in range(a.n):
            written[f"alert {i}"] = time.time()
            w.emit("alert", kind="stall", message=f"alert {i}", hint="")
            time.sleep(1.3)  # not a multiple of the poll interval: the phase varies
    n.finish(timeout=30)
    server.shutdown()
    delays = [t - written[body.split("\n")[0]] for t, body in got]
    result = {"date": time.strftime("%Y-%m-%d"), "poll_s": POLL_S, "delivered": len(got), "written": a.n,
              "delay_median_s": round(statistics.median(delays), 3), "delay_max_s": round(max(delays), 3),
              "command": "python -m benchmarks.notify_delay"}
    print(json.dumps(result))
    if a.out:
        a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
