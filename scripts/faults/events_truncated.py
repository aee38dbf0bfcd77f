"""``events.jsonl`` truncated by an outside tool (``truncate -s``) while a real run writes it and readers
follow it, at random moments and to random sizes; every reader must recover.

    python scripts/faults/events_truncated.py [--truncations 12] [--seed 6]

Readers, all in this process except the CLI, all running the whole time:

* raw: ``events.read_new`` in a loop, as any script would;
* dashboard: ``history_reader.load_history`` then ``EventFollower.poll``, rebuilding when it asks (the
  dashboard's own loop, ``tui/dashboard/screen.py``), into a ``RunHistory``;
* ``zerotui runs --json`` (a fresh process) after each truncation.

Sizes: 0 (emptied), a random byte offset (almost always mid-line), or the start of a random line.
After each truncation, within 15 s: the raw reader has read a step event newer than the one before the
truncation; the dashboard's history shows a step within a few logged steps of the file's newest step;
``zerotui runs`` exits 0 and lists the run as running; no reader raised. At the end the worker
completes (its appends went on after each truncation) and a fresh ``load_history`` of the file shows
the last step.

Writes ``benchmarks/results/faults-events-truncated.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from zerotui.core.events.stream import read_all, read_new  # noqa: E402
from zerotui.core.events.reader import EventFollower, load_history  # noqa: E402
from zerotui.core.events.columns import parse_events  # noqa: E402

OPTIONS = ["--max-steps", "1200", "--log-interval", "2", "--save-interval", "100", "--keep-checkpoints", "1",
           "--eval-interval", "0", "--no-save-final"]


class Readers:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.raw_step = 0
        self.raw_restarts = 0
        self.history = None
        self.rebuilds = 0
        self.lock = threading.Lock()

    def raw(self) -> None:
        offset = 0
        try:
            while not self.stop.is_set():
                before = offset
                events, offset = read_new(self.path, offset)
                if offset < before:
                    self.raw_restarts += 1
                for ev in events:
                    if ev.get("type") == "step" and isinstance(ev.get("step"), int):
                        self.raw_step = ev["step"]
                time.sleep(0.2)
        except Exception:  # noqa: BLE001 - the point is to see it
            self.errors.append("raw: " + traceback.format_exc())

    def dashboard(self) -> None:
        try:
            history, offset = load_history(self.path, parallel=False)
            follower = EventFollower(self.path, offset)
            with self.lock:
                self.history = history
            while not self.stop.is_set():
                events, rebuild = follower.poll()
                if rebuild:
                    history, follower.offset = load_history(self.path, parallel=False)
                    with self.lock:
                        self.history = history
                        self.rebuilds += 1
                elif events:
                    with self.lock:
                        self.history.ingest(parse_events(events))
                else:
                    time.sleep(0.25)
        except Exception:  # noqa: BLE001
            self.errors.append("dashboard: " + traceback.format_exc())

    def shown_step(self) -> int:
        with self.lock:
            return (self.history.current_step or 0) if self.history is not None else 0


def newest_step(path: Path) -> int:
    steps = [e["step"] for e in read_all(path) if e["type"] == "step"]
    return steps[-1] if steps else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--truncations", type=int, default=12)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    note = common.machine_note()
    tmp = tempfile.TemporaryDirectory(prefix="zerotui-trunc-")
    runs = Path(tmp.name)
    paths = common.train(runs, *OPTIONS)
    common.wait_for(lambda: newest_step(paths.events) >= 10, 300, "step 10")
    readers = Readers(paths.events)
    threads = [threading.Thread(target=readers.raw, daemon=True), threading.Thread(target=readers.dashboard, daemon=True)]
    for t in threads:
        t.start()
    trials = []
    for i in range(args.truncations):
        time.sleep(rng.uniform(1.0, 5.0))
        data = paths.events.read_bytes()
        how = rng.choice(["empty", "mid-line", "line boundary"])
        if how == "empty":
            size = 0
        elif how == "mid-line":
            size = rng.randint(1, len(data) - 1)
        else:
            starts = [0] + [k + 1 for k in range(len(data)) if data[k:k + 1] == b"\n"][:-1]
            size = rng.choice(starts)
        step_before = newest_step(paths.events)
        subprocess.run(["truncate", "-s", str(size), str(paths.events)], check=True)  # the outside tool
        t0 = time.monotonic()
        try:
            common.wait_for(lambda: readers.raw_step > step_before, 15, "the raw reader to see a new step")
            common.wait_for(lambda: newest_step(paths.events) - readers.shown_step() <= 6 and readers.shown_step() > 0,
                            15, "the dashboard's history to catch up")
            recovered_s = round(time.monotonic() - t0, 2)
        except TimeoutError as err:
            recovered_s = None
            trials.append({"trial": i, "how": how, "size": size, "error": str(err)})
        runs_cli = common.zerotui(runs, "runs", "--json", "--runs-dir", str(runs))
        listed = json.loads(runs_cli.stdout) if runs_cli.returncode == 0 else None
        state = None
        if isinstance(listed, list) and listed:
            state = listed[0].get("state")
        elif isinstance(listed, dict):
            state = (listed.get("runs") or [{}])[0].get("state")
        trial = {"trial": i, "how": how, "size": size, "file_size_before": len(data), "step_before": step_before,
                 "recovered_s": recovered_s, "raw_step": readers.raw_step, "dashboard_step": readers.shown_step(),
                 "runs_rc": runs_cli.returncode, "runs_state": state, "runs_stderr": runs_cli.stderr.strip()[-300:]}
        trial["ok"] = recovered_s is not None and runs_cli.returncode == 0 and state == "running" and not readers.errors
        trials.append(trial)
        print(json.dumps(trial), flush=True)
    fin = common.wait_finished(paths, 900)
    readers.stop.set()
    for t in threads:
        t.join(5)
    final_history, _ = load_history(paths.events, parallel=False)
    bad_lines = sum(1 for line in paths.events.read_bytes().split(b"\n") if line and not line.startswith(b"{\"v\""))
    ok = (all(t.get("ok") for t in trials) and fin["state"] == "completed" and not readers.errors
          and final_history.current_step == 1200)
    result = {"command": " ".join(["python", *sys.argv]), "machine": note, "ok": ok,
              "truncations": len(trials), "truncations_ok": sum(1 for t in trials if t.get("ok")),
              "final_state": fin["state"], "final_history_step": final_history.current_step,
              "reader_errors": readers.errors, "raw_reader_restarts": readers.raw_restarts,
              "dashboard_rebuilds": readers.rebuilds, "garbled_lines_in_final_file": bad_lines, "trials": trials}
    out = common.write_result("events-truncated", result)
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=1), "->", out)
    tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
