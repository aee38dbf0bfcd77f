"""Regenerate the dashboard's and the runs screen's SVG and PNG: ``python screenshots/make_dashboard_screenshots.py``.

The runs are the recorded event files of the dashboard tests (``tests/fixtures/events``), copied into a
fixed folder; the clock is frozen 10 s after each run's last event and the time zone set to UTC, so the
pictures are the same on every machine. PNGs need cairosvg or rsvg-convert (see make_screenshots.py).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures" / "events"
RUNS_DIR = Path("/tmp/zerotui-screenshots/dashboard-runs")

# name -> (fixture, terminal size, status.json state or None for a live worker, caption)
SHOTS = {
    "dashboard-160x48": ("live.jsonl", (160, 48), None,
                         "Dashboard of a live fp16 run: loss with eval, loss scale with skipped steps, GPU, "
                         "throughput, host, stats and log"),
    "dashboard-80x24": ("live.jsonl", (80, 24), None, "The same run at 80×24: one pane at a time (keys 1-7)"),
    "dashboard-startup-80x24": ("startup.jsonl", (80, 24), None, "Start-up phases instead of empty charts"),
    "dashboard-failed-160x48": ("failed.jsonl", (160, 48), "failed", "A failed run opens read-only with its reason"),
    # The runs screen lists the three runs above (written by their shots, or here when taken alone).
    "runs-120x40": (None, (120, 40), None, "Runs (r, or `zerotui attach` with no run): state, step, loss, "
                    "speed; Enter opens the dashboard"),
}


def _run(name: str, fixture: str, state: Optional[str]) -> tuple[Path, float]:
    root = RUNS_DIR / f"20260101-000000-{name}"
    shutil.rmtree(root, ignore_errors=True)
    (root / "checkpoints").mkdir(parents=True)
    shutil.copy(FIXTURES / fixture, root / "events.jsonl")
    (root / "plan.yaml").write_text("name: demo\n")
    last = float(json.loads((root / "events.jsonl").read_text().splitlines()[-1])["t"])
    status = {"state": state or "running", "pid": os.getpid(), "pids": [os.getpid()], "heartbeat": last}
    (root / "status.json").write_text(json.dumps(status))
    return root, last


async def take(name: str, out: Path) -> Path:
    from textual.app import App

    from zerotui.core.run.folder import RunPaths
    from zerotui.tui.dashboard.screen import DashboardScreen

    fixture, size, state, _ = SHOTS[name]
    if fixture is None:
        return await take_runs(name, out)
    root, last = _run(name, fixture, state)

    class ShotApp(App):
        TITLE = "zerotui"

        def on_mount(self) -> None:
            self.push_screen(DashboardScreen(RunPaths(root), clock=lambda: last + 10.0))

    app = ShotApp()
    async with app.run_test(size=size) as pilot:
        for _ in range(400):  # the history read, the estimate and every visible chart drawn
            await pilot.pause(0.025)
            screen = app.screen
            if isinstance(screen, DashboardScreen) and screen.history is not None and \
                    screen.estimate_state != "pending" and not any(c.dirty and c._shown() for c in screen.charts):
                break
        await pilot.pause(0.2)
        svg = out / f"{name}.svg"
        app.save_screenshot(filename=svg.name, path=str(out))
    return svg


class _FrozenTime:
    """The ``time`` module with ``time()`` stopped at ``now`` (patched into the two core modules that judge
    run state and duration, not globally: Textual's own timers keep the real clock)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str):
        return getattr(time, name)


async def take_runs(name: str, out: Path) -> Path:
    """The runs screen over the dashboard shots' runs, at a clock 10 s after the newest event."""
    from textual.app import App

    import zerotui.core.run.overview as run_overview
    import zerotui.core.run.folder as runs
    from zerotui.tui.dashboard.runs import RunsScreen

    shutil.rmtree(RUNS_DIR, ignore_errors=True)  # only the runs below, none left by earlier shots
    lasts = [_run(n, fx, st)[1] for n, (fx, _, st, _) in SHOTS.items() if fx is not None and "80x24" not in n]
    now = max(lasts) + 10.0
    runs.time = run_overview.time = _FrozenTime(now)  # type: ignore[assignment]

    class ShotApp(App):
        TITLE = "zerotui"

        def on_mount(self) -> None:
            self.push_screen(RunsScreen(runs_dir=RUNS_DIR, clock=lambda: now))

    app = ShotApp()
    async with app.run_test(size=SHOTS[name][1]) as pilot:
        for _ in range(200):
            await pilot.pause(0.025)
            if app.workers and all(w.is_finished for w in app.workers):
                break
        await pilot.pause(0.3)
        svg = out / f"{name}.svg"
        app.save_screenshot(filename=svg.name, path=str(out))
    return svg


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these shots (default: all)")
    parser.add_argument("-o", "--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    os.environ["TZ"] = "UTC"
    time.tzset()
    sys.path.insert(0, str(HERE))
    from make_screenshots import to_png, write_index

    pngs = True
    for name in [n for n in SHOTS if not args.names or n in args.names]:
        svg = asyncio.run(take(name, args.out))
        why = to_png(svg, svg.with_suffix(".png"))
        pngs = pngs and not why
        print(f"{svg}" + (f" (no PNG: {why})" if why else f" + {svg.with_suffix('.png').name}"))
        print(f"  {SHOTS[name][3]}")
    if not args.names:
        write_index(args.out, ".png" if pngs else ".svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
