"""Long-run benchmark of the dashboard: a 32-hour run's events file opened, drawn and followed.

Targets: first full frame < 2 s, every redraw < 50 ms, process memory < 300 MB, on the
project's 2-core machine, with >= 300,000 step events plus telemetry.

    python benchmarks/dashboard/long_run.py                 # 3 cold starts at 160x48 + 1 at 80x24
    python benchmarks/dashboard/long_run.py --repeats 1 --live-s 10

Each measurement is a fresh Python process (imports count) that hosts ``DashboardScreen`` headless
(``App.run_test``): repaints are timed including the escape-sequence encoding a terminal would get
(which a headless app skips), but nothing is written to a terminal.
While it runs, this parent process plays the worker: it keeps ``status.json`` beating and appends step
events (10/s) and telemetry (every 5 s) to the same file, so the redraw figures are for a live run.

Measured per child:
* ``first_frame_s``: from the parent's spawn of the child to every visible chart built from the whole
  history and painted (``await pilot.pause()`` after the build); ``history_load_s`` is the file read;
* ``live_tick_ms`` / ``live_paint_ms`` (wall) and ``*_cpu_ms`` (this thread's CPU): each timer tick's
  chart building and each repaint while events stream in; a frame is one tick plus one repaint;
* ``full_redraw_ms``: all charts rebuilt at once plus the repaint, for each zoom and x axis (not what
  the dashboard does: its tick spreads a rebuild of everything over two ticks; reported as the worst
  case without that budget);
* ``rss_mb``: resident memory after the first frame and at the end; ``peak_rss_mb`` (ru_maxrss).

Results go to ``benchmarks/results/dashboard-long-run.json``.
"""
from __future__ import annotations

import time

T_START = time.perf_counter()  # before any import: the child's first-frame clock starts here

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "dashboard-long-run.json"


# -- the child: one dashboard process -----------------------------------------------------------

def child(run_dir: Path, size: tuple[int, int], live_s: float) -> dict:
    import asyncio
    import resource

    import psutil
    from textual.app import App

    from zerotui.core.run.folder import RunPaths
    from zerotui.tui.dashboard.screen import DashboardScreen
    from zerotui.tui.dashboard.charts import ZOOMS

    proc = psutil.Process()
    out: dict = {"size": f"{size[0]}x{size[1]}"}

    class BenchApp(App):
        def on_mount(self) -> None:
            self.push_screen(DashboardScreen(RunPaths(run_dir), live=True))

    async def main() -> None:
        app = BenchApp()
        async with app.run_test(size=size) as pilot:
            while True:
                await asyncio.sleep(0.005)
                screen = app.screen
                if isinstance(screen, DashboardScreen) and screen.history is not None and not any(
                        c.dirty and c._shown() for c in screen.charts):
                    break
            await pilot.pause()
            out["first_frame_process_s"] = time.perf_counter() - T_START
            out["first_frame_epoch"] = time.time()
            out["history_load_s"] = screen.load_seconds
            out["events_loaded"] = screen.history.events
            out["series_bytes"] = screen.history.nbytes()
            out["rss_mb_first_frame"] = proc.memory_info().rss / 2**20
            out["cpu_s_first_frame"] = time.process_time()  # this process: imports, UI, its share of the read
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            out["helper_cpu_s"] = children.ru_utime + children.ru_stime  # the helper's share of the read
            print("READY", flush=True)  # the parent starts appending now
            # Time every repaint: the compositor's update plus the terminal encoding that a headless
            # app skips (render_segments), so the figure is what a real terminal would cost.
            paints: list[float] = []
            display = app._display

            def encoded_display(scr, renderable):
                if renderable is not None and hasattr(renderable, "render_segments"):
                    renderable.render_segments(app.console)
                display(scr, renderable)
            app._display = encoded_display
            refresh = screen._compositor_refresh

            paint_cpu: list[float] = []
            frames: list[float] = []       # a tick that built charts + the repaint that showed them
            pending = {"tick": 0.0}
            slowest: list[tuple[float, list[str]]] = []

            def timed_refresh():
                dirty = sorted(str(w.id or type(w).__name__) for w in screen._dirty_widgets)
                t, c = time.perf_counter(), time.thread_time()
                refresh()
                wall = (time.perf_counter() - t) * 1000
                paints.append(wall)
                paint_cpu.append((time.thread_time() - c) * 1000)
                frames.append(pending["tick"] + wall)
                pending["tick"] = 0.0
                slowest.append((wall, dirty))
                slowest.sort(key=lambda x: -x[0])
                del slowest[3:]
            screen._compositor_refresh = timed_refresh
            # CPU time of each tick that built charts: on a machine shared with other work, wall time
            # also counts the time the OS gave the CPU to someone else; CPU time is this code's own cost.
            tick_cpu: list[float] = []
            tick = screen._tick

            def timed_tick():
                before, c, t = len(screen.tick_ms), time.thread_time(), time.perf_counter()
                tick()
                if len(screen.tick_ms) > before:
                    tick_cpu.append((time.thread_time() - c) * 1000)
                    pending["tick"] += (time.perf_counter() - t) * 1000
            screen._tick = timed_tick
            for timer in screen._timers:  # the interval timer holds the bound method: point it here
                if timer.name == "dashboard redraw":
                    timer._callback = timed_tick
            # Garbage-collector pauses during the live phase (a full collection can stall any frame).
            import gc

            gc_pauses: list[tuple[int, float]] = []
            gc_start: dict[str, float] = {}

            def on_gc(phase: str, info: dict) -> None:
                if phase == "start":
                    gc_start["t"] = time.perf_counter()
                elif "t" in gc_start:
                    gc_pauses.append((info["generation"], (time.perf_counter() - gc_start.pop("t")) * 1000))
            gc.callbacks.append(on_gc)
            screen.tick_ms.clear()
            steps_before = screen.history.current_step
            await asyncio.sleep(live_s)
            out["live_ticks_ms"] = list(screen.tick_ms)
            out["live_paints_ms"] = list(paints)
            out["live_frames_ms"] = list(frames)
            out["slowest_paints"] = [{"ms": round(ms, 2), "dirty": d[:12]} for ms, d in slowest]
            out["live_tick_cpu_ms"] = list(tick_cpu)
            gc.callbacks.remove(on_gc)
            out["gc_pauses_ms_max"] = {g: round(max((ms for gen, ms in gc_pauses if gen == g), default=0.0), 2)
                                       for g in (0, 1, 2)}
            out["gc_collections"] = {g: sum(1 for gen, _ in gc_pauses if gen == g) for g in (0, 1, 2)}
            out["live_paint_cpu_ms"] = list(paint_cpu)
            out["live_steps_seen"] = (screen.history.current_step or 0) - (steps_before or 0)
            redraws = []
            for zoom in range(len(ZOOMS)):
                for x_mode in ("time", "step"):
                    screen.zoom, screen.x_mode = zoom, x_mode
                    for _ in range(5):
                        # every chart stale at once (a zoom or axis key): build them all in one go, then
                        # repaint. The dashboard's own tick would spread this over two ticks (budget).
                        for c in screen.charts:
                            c.dirty = True
                        del paints[:]
                        t0 = time.perf_counter()
                        for c in screen.charts:
                            c.configure(ZOOMS[zoom][1], x_mode)
                            c.redraw()
                        t1 = time.perf_counter()
                        await pilot.pause(0.05)  # the screen's update timer repaints (timed above)
                        paint = sum(paints)
                        redraws.append({"zoom": ZOOMS[zoom][0], "x": x_mode, "build_ms": (t1 - t0) * 1000,
                                        "paint_ms": paint, "ms": (t1 - t0) * 1000 + paint,
                                        "charts_ms": {c.id: round(c.build_ms, 2) for c in screen.charts}})
            out["full_redraws"] = redraws
            out["rss_mb_end"] = proc.memory_info().rss / 2**20
            out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            out["estimator_present"] = _has("zerotui.core.estimate.budget")
            out["torch_imported"] = "torch" in sys.modules
            await pilot.press("d")

    asyncio.run(main())
    return out


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# -- the parent: the run folder, the fake worker, the children -------------------------------------

class FakeWorker(threading.Thread):
    """Appends what a worker would (10 steps/s, telemetry every 5 s) and keeps status.json beating."""

    def __init__(self, run_dir: Path, first_step: int, t0: float, gpus: int) -> None:
        super().__init__(daemon=True)
        self.run_dir, self.step, self.t, self.gpus = run_dir, first_step, t0, gpus
        self.appending = threading.Event()
        self.stop = threading.Event()

    def run(self) -> None:
        from zerotui.core.events.stream import EventWriter, make_event
        from zerotui.core.run.folder import RunPaths, write_status

        paths = RunPaths(self.run_dir)
        last_tel = 0.0
        with EventWriter(paths.events) as w:
            while not self.stop.is_set():
                write_status(paths, state="running", pid=os.getpid(), pids=[os.getpid()], step=self.step)
                if self.appending.is_set():
                    self.step += 1
                    self.t += 0.1
                    # event times continue the synthetic run's clock, as the same worker would
                    w.write(make_event("step", t=self.t, step=self.step, epoch=self.step / 1e5, loss=1.0,
                                       lr=1e-5, grad_norm=1.0, loss_scale=65536.0, skipped=0,
                                       samples_per_s=85.0, tokens_per_s=340000.0, tflops=400.0, step_time=0.1))
                    if time.monotonic() - last_tel >= 5.0:
                        last_tel = time.monotonic()
                        w.write(make_event(
                            "telemetry", t=self.t,
                            gpus=[{"index": i, "util": 95, "mem_used": 72 * 2**30, "mem_total": 80 * 2**30,
                                   "power_w": 600.0, "temp_c": 70} for i in range(self.gpus)],
                            cpu_percent=40.0, ram_used=412 * 2**30, ram_total=1024 * 2**30, rss=380 * 2**30,
                            nvme_bytes=0))
                time.sleep(0.1)


def prepare(base: Path, hours: float, steps: int, gpus: int) -> tuple[Path, dict]:
    sys.path.insert(0, str(HERE))
    from synth_events import write_run

    run_dir = base / f"20260101-000000-synthetic-{int(hours)}h-{steps}-{gpus}gpu"
    meta = run_dir / "synth.json"
    events = run_dir / "events.jsonl"
    if meta.exists() and events.exists():
        counts = json.loads(meta.read_text())
        # the fake worker appended to it last time: cut back to what was generated
        with open(events, "r+b") as fh:
            fh.truncate(counts["bytes"])
        return run_dir, counts
    (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    (run_dir / "plan.yaml").write_text("name: synthetic\n")
    started = time.perf_counter()
    counts = write_run(events, hours=hours, steps=steps, gpus=gpus)
    counts["generate_s"] = round(time.perf_counter() - started, 1)
    meta.write_text(json.dumps(counts))
    return run_dir, counts


def run_child(run_dir: Path, size: str, live_s: float, steps: int, gpus: int, nbytes: int) -> dict:
    from zerotui.core.events.reader import _last_time

    events = run_dir / "events.jsonl"
    with open(events, "r+b") as fh:  # every child reads the same file: drop the last child's appends
        fh.truncate(nbytes)
    fake = FakeWorker(run_dir, first_step=steps, t0=_last_time(events, nbytes) or time.time(), gpus=gpus)
    fake.start()
    time.sleep(0.3)  # a fresh heartbeat before the dashboard looks
    env = {**os.environ, "TZ": "UTC"}
    spawned = time.time()
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(run_dir), "--size", size,
                             "--live-s", str(live_s)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "READY":
            fake.appending.set()
            break
    stdout, stderr = proc.communicate(timeout=600)
    fake.stop.set()
    fake.join()
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}):\n{stderr[-4000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["first_frame_s"] = result.pop("first_frame_epoch") - spawned
    result["appended_steps"] = fake.step - steps
    return result


def decode_speed(events: Path, limit: int = 60_000) -> dict:
    """CPU seconds to decode the first ``limit`` lines with the json module and with orjson."""
    import json as std

    import orjson

    with open(events, "rb") as fh:
        lines = [fh.readline() for _ in range(limit)]
    out = {"lines": len(lines)}
    for name, loads in (("json", std.loads), ("orjson", orjson.loads)):
        t0 = time.process_time()
        for line in lines:
            loads(line)
        out[f"{name}_cpu_s"] = round(time.process_time() - t0, 3)
    out["speedup"] = round(out["json_cpu_s"] / out["orjson_cpu_s"], 2)
    return out


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "median": statistics.median(values), "p95": ordered[int(0.95 * (len(values) - 1))],
            "max": ordered[-1]}


def summarize(runs: list[dict]) -> dict:
    ticks = [t for r in runs for t in r["live_ticks_ms"]]
    live_paints = [t for r in runs for t in r["live_paints_ms"]]
    full = [d["ms"] for r in runs for d in r["full_redraws"]]
    paint = [d["paint_ms"] for r in runs for d in r["full_redraws"]]
    return {
        "first_frame_s": {"max": max(r["first_frame_s"] for r in runs),
                          "median": statistics.median(r["first_frame_s"] for r in runs)},
        "history_load_s": {"max": max(r["history_load_s"] for r in runs)},
        "live_tick_ms": {"n": len(ticks), "median": statistics.median(ticks) if ticks else None,
                         "p95": sorted(ticks)[int(0.95 * (len(ticks) - 1))] if ticks else None,
                         "max": max(ticks) if ticks else None},
        "full_redraw_all_charts_ms": {"n": len(full), "median": statistics.median(full),
                                      "p95": sorted(full)[int(0.95 * (len(full) - 1))], "max": max(full)},
        "full_redraw_paint_ms": {"median": statistics.median(paint), "max": max(paint)},
        "live_paint_ms": {"n": len(live_paints), "median": statistics.median(live_paints) if live_paints else None,
                          "max": max(live_paints) if live_paints else None},
        "live_frame_bound_ms": max(ticks or [0]) + max(live_paints or [0]),
        "live_frame_ms": _stats([t for r in runs for t in r["live_frames_ms"]]),
        "live_tick_cpu_ms": _stats([t for r in runs for t in r["live_tick_cpu_ms"]]),
        "live_paint_cpu_ms": _stats([t for r in runs for t in r["live_paint_cpu_ms"]]),
        "cpu_s_first_frame": {"max": max(r["cpu_s_first_frame"] for r in runs)},
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="dashboard long-run benchmark")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--size", default="160x48")
    parser.add_argument("--live-s", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hours", type=float, default=32.0)
    parser.add_argument("--steps", type=int, default=300_000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/zerotui-bench-dashboard"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.child:
        w, h = (int(v) for v in args.size.split("x"))
        print(json.dumps(child(args.child, (w, h), args.live_s)))
        return 0

    run_dir, counts = prepare(args.work_dir, args.hours, args.steps, args.gpus)
    print(f"events file: {counts}", file=sys.stderr)
    load_before = os.getloadavg()
    runs = []
    for size in [args.size] * args.repeats + ["80x24"]:
        r = run_child(run_dir, size, args.live_s, args.steps, args.gpus, counts["bytes"])
        runs.append(r)
        print(f"{size}: first frame {r['first_frame_s']:.2f} s (load {r['history_load_s']:.2f} s), "
              f"ticks max {max(r['live_ticks_ms'] or [0]):.1f} ms, full redraw max "
              f"{max(d['ms'] for d in r['full_redraws']):.1f} ms, peak RSS {r['peak_rss_mb']:.0f} MB",
              file=sys.stderr)
    wide = [r for r in runs if r["size"] == args.size]
    summary = summarize(wide)
    targets = {"first_frame_s": 2.0, "redraw_ms": 50.0, "rss_mb": 300.0}
    summary["meets_targets"] = {
        "first_frame": summary["first_frame_s"]["max"] < targets["first_frame_s"],
        "live_ticks": (summary["live_tick_ms"]["max"] or 0) < targets["redraw_ms"],
        "live_frames": summary["live_frame_ms"].get("max", 0) < targets["redraw_ms"],

        "memory": max(r["peak_rss_mb"] for r in runs) < targets["rss_mb"],
    }
    # Not a target: every chart rebuilt in one frame. The dashboard never does that (its tick stops
    # building at TICK_BUDGET_MS and leaves the rest for the next tick, 0.25 s later); this is the
    # worst case a frame would cost without that budget.
    summary["informational"] = {"all_charts_in_one_frame_under_50ms":
                                summary["full_redraw_all_charts_ms"]["max"] < targets["redraw_ms"]}
    result = {
        "benchmark": "dashboard long run (benchmarks/dashboard/long_run.py)",
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
                    "note": "shared 2-core machine: other sessions' tests ran at the same time"},
        "events_file": counts, "targets": targets, "summary": summary,
        "decode": decode_speed(run_dir / "events.jsonl"),
        "runs": [{k: v for k, v in r.items() if k not in ("full_redraws", "live_ticks_ms", "live_paints_ms",
                                                          "live_tick_cpu_ms", "live_paint_cpu_ms",
                                                          "live_frames_ms")} |
                 {"live_ticks_ms_max": max(r["live_ticks_ms"] or [0]),
                  "live_ticks": len(r["live_ticks_ms"]),
                  "live_paint_ms_max": max(r["live_paints_ms"] or [0]),
                  "live_frame_ms_max": max(r["live_frames_ms"] or [0]),
                  "full_redraw_ms_max": max(d["ms"] for d in r["full_redraws"]),
                  "full_redraw_slowest": max(r["full_redraws"], key=lambda d: d["ms"])}
                 for r in runs],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if all(summary["meets_targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
