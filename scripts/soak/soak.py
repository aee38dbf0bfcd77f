"""Soak: the dashboard (``zerotui attach`` in a real terminal: tmux) follows a long run; the memory of the
dashboard and of the worker is sampled the whole time.

    python scripts/soak/soak.py synthetic [--minutes 10]   # a 32-hour history replayed in minutes
    python scripts/soak/soak.py real [--minutes 32]        # the tiny model on the CPU, for real

``synthetic``: ``benchmarks/dashboard/synth_events.py`` writes a 32-hour run (300,000 steps, telemetry of
8 GPUs every 5 s: ~110 MB); ``scripts/soak/synth_worker.py`` replays it into a run folder over
``--minutes`` while the dashboard is attached from the first line. Samples every 5 s.

``real``: ``zerotui train tiny-cpu-demo`` with a schedule longer than the soak, every step logged, a
checkpoint every 500 steps, telemetry every 5 s (the worker's default); the dashboard attached from the
start; after ``--minutes`` a graceful ``zerotui stop``. Samples every 30 s.

Each sample: resident memory (RSS) of the dashboard process (with any child it started) and of the
worker, the events file's size, the newest step, the load average (this machine is shared). Flat means:
after the warm-up (the first quarter of the samples), the RSS of the last quarter is within a few MB of
the second quarter; the summary gives both and the least-squares slope in MB per hour of wall time.

Results merge into ``benchmarks/results/soak-<date>.json`` under the mode's name.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "dashboard"))
sys.path.insert(0, str(ROOT / "scripts" / "faults"))
import common  # noqa: E402
import synth_events  # noqa: E402

from zerotui.core.events.stream import read_all  # noqa: E402
from zerotui.core.run.folder import RunPaths, read_status  # noqa: E402

ZEROTUI = str(Path(sys.executable).with_name("zerotui"))
MB = 1 << 20


def tmux(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=check)


def attach(session: str, run: Path, env: dict[str, str]) -> psutil.Process:
    """``zerotui attach RUN`` in a detached 160x48 tmux session; the dashboard's process."""
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "48",
         f"export {exports}; exec {ZEROTUI} attach {shlex.quote(str(run))}")
    pane = int(tmux("list-panes", "-t", session, "-F", "#{pane_pid}").stdout.split()[0])
    return psutil.Process(pane)  # exec: the pane's process is the dashboard itself


def tree_rss(proc: psutil.Process) -> int | None:
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def newest_step(path: Path) -> int | None:
    """The step of the newest step event in the file's last 64 KiB."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, path.stat().st_size - 65536))
            tail = fh.read().split(b"\n")[1:]
    except OSError:
        return None
    for line in reversed(tail):
        if b'"type":"step"' in line:
            try:
                return int(json.loads(line)["step"])
            except (ValueError, KeyError):
                continue
    return None


def sample(t0: float, dash: psutil.Process, worker: psutil.Process | None, events: Path) -> dict:
    w = tree_rss(worker) if worker is not None else None
    return {"t_s": round(time.monotonic() - t0, 1), "dashboard_rss_mb": _mb(tree_rss(dash)),
            "worker_rss_mb": _mb(w), "events_mb": round(events.stat().st_size / MB, 2) if events.exists() else 0,
            "step": newest_step(events), "load_avg_1m": round(os.getloadavg()[0], 2)}


def _mb(value: int | None) -> float | None:
    return None if value is None else round(value / MB, 1)


def flatness(samples: list[dict], key: str) -> dict:
    values = [(s["t_s"], s[key]) for s in samples if s.get(key) is not None]
    if len(values) < 8:
        return {"samples": len(values)}
    q = len(values) // 4
    second = [v for _, v in values[q:2 * q]]
    last = [v for _, v in values[-q:]]
    xs = [t / 3600 for t, _ in values[q:]]
    ys = [v for _, v in values[q:]]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / max(1e-12, sum((x - mx) ** 2 for x in xs))
    return {"samples": len(values), "first_mb": values[0][1], "max_mb": max(v for _, v in values),
            "second_quarter_mean_mb": round(sum(second) / len(second), 1),
            "last_quarter_mean_mb": round(sum(last) / len(last), 1),
            "growth_after_warmup_mb": round(sum(last) / len(last) - sum(second) / len(second), 1),
            "slope_mb_per_hour_after_warmup": round(slope, 2)}


def screen_shows(session: str, *texts: str) -> bool:
    shown = tmux("capture-pane", "-p", "-t", session, check=False).stdout
    return all(t in shown for t in texts)


def synthetic(minutes: float) -> dict:
    tmp = tempfile.TemporaryDirectory(prefix="zerotui-soak-synth-")
    base = Path(tmp.name)
    source = base / "32h.jsonl"
    counts = synth_events.write_run(source)
    run = base / "runs" / "20260101-000000-synthetic-32h"
    run.mkdir(parents=True)
    env = {"ZEROTUI_RUNS_DIR": str(base / "runs")}
    worker = subprocess.Popen([sys.executable, str(HERE / "synth_worker.py"), str(run), str(source),
                               "--minutes", str(minutes)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    common.wait_for(lambda: (run / "events.jsonl").exists(), 30, "the first events")
    session = f"zt-soak-synth-{os.getpid()}"
    dash = attach(session, run, env)
    t0 = time.monotonic()
    samples = []
    paths = RunPaths(run)
    while worker.poll() is None:
        samples.append(sample(t0, dash, psutil.Process(worker.pid), paths.events))
        time.sleep(5)
    replay = json.loads(worker.stdout.read().decode().strip().splitlines()[-1])
    for _ in range(12):  # one more minute on the finished run
        samples.append(sample(t0, dash, None, paths.events))
        time.sleep(5)
    shows_end = common.wait_for(lambda: screen_shows(session, "completed", "300,000"), 60, "the finished run", poll=1)
    final = tmux("capture-pane", "-p", "-t", session, check=False).stdout
    tmux("kill-session", "-t", session, check=False)
    tmp.cleanup()
    return {"source": counts, "replay": replay, "samples_every_s": 5, "samples": samples,
            "dashboard": flatness(samples, "dashboard_rss_mb"), "dashboard_shows_end": bool(shows_end),
            "final_screen_head": final.splitlines()[:4]}


def real(minutes: float) -> dict:
    tmp = tempfile.TemporaryDirectory(prefix="zerotui-soak-real-")
    runs = Path(tmp.name)
    os.environ.pop("ZEROTUI_TELEMETRY_S", None)
    options = ["--max-steps", "1000000", "--log-interval", "1", "--save-interval", "500", "--keep-checkpoints", "2",
               "--eval-interval", "1000", "--no-save-final"]
    proc = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", "tiny-cpu-demo", "--runs-dir", str(runs),
                           "--json", *options], capture_output=True, text=True, check=True)
    paths = RunPaths(Path(json.loads(proc.stdout)["path"]))
    worker = psutil.Process(common.worker_pid(paths))
    session = f"zt-soak-real-{os.getpid()}"
    dash = attach(session, paths.root, {"ZEROTUI_RUNS_DIR": str(runs)})
    t0 = time.monotonic()
    samples = []
    while time.monotonic() - t0 < minutes * 60:
        samples.append(sample(t0, dash, worker, paths.events))
        time.sleep(30)
    samples.append(sample(t0, dash, worker, paths.events))
    subprocess.run([sys.executable, "-m", "zerotui.cli.main", "stop", paths.name, "--runs-dir", str(runs)],
                   capture_output=True, text=True)
    fin = common.wait_finished(paths, 300)
    common.wait_for(lambda: screen_shows(session, "stopped"), 60, "the dashboard to show the stop", poll=1)
    final = tmux("capture-pane", "-p", "-t", session, check=False).stdout
    tmux("kill-session", "-t", session, check=False)
    evs = read_all(paths.events)
    counts = {}
    for e in evs:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    out = {"options": options, "samples_every_s": 30, "samples": samples, "final_state": fin["state"],
           "final_step": fin.get("step"), "event_counts": counts, "events_mb": round(paths.events.stat().st_size / MB, 2),
           "status": {k: read_status(paths).get(k) for k in ("state", "step", "checkpoint_step")},
           "dashboard": flatness(samples, "dashboard_rss_mb"), "worker": flatness(samples, "worker_rss_mb"),
           "final_screen_head": final.splitlines()[:4]}
    tmp.cleanup()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["synthetic", "real"])
    ap.add_argument("--minutes", type=float)
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load0 = list(os.getloadavg())
    if args.mode == "synthetic":
        result = synthetic(args.minutes or 10.0)
    else:
        result = real(args.minutes or 32.0)
    result.update(command=" ".join(["python", *sys.argv]), started=started, ended=time.strftime("%Y-%m-%d %H:%M:%S"),
                  load_avg_start=load0, load_avg_end=list(os.getloadavg()), cpus=os.cpu_count())
    out = ROOT / "benchmarks" / "results" / f"soak-{time.strftime('%Y-%m-%d')}.json"
    merged = json.loads(out.read_text()) if out.exists() else {}
    merged[args.mode] = result
    out.write_text(json.dumps(merged, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1), "->", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
