"""How fast the wizard is: import, first frame, estimate, Fit, and a key press to an updated budget bar.

    python benchmarks/wizard_latency.py [-o benchmarks/results/wizard-latency.json]

Headless (Textual's Pilot) on the fake 24 GB workstation, medians of several runs; the time from
`zerotui` to a first frame in a real terminal is measured with tmux (see ``tmux_first_frame``), and is
skipped when tmux is missing. Numbers depend on the machine: the JSON records which one.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

IMPORT_PROBE = ("import time; t = time.perf_counter(); import zerotui.tui.app, zerotui.tui.wizard.hardware; "
                "import sys; print(time.perf_counter() - t, sorted(m for m in ('torch', 'deepspeed', "
                "'transformers') if m in sys.modules))")


def import_seconds(runs: int = 5) -> tuple[float, list]:
    times, heavy = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True)
        seconds, loaded = out.stdout.split(" ", 1)
        times.append(float(seconds))
        heavy = loaded.strip()
    return statistics.median(times), heavy


def estimate_ms(runs: int = 2000) -> dict[str, float]:
    from zerotui.core.estimate.budget import estimate
    from zerotui.core.model.spec import spec_for_plan
    from zerotui.core.plan.presets import load_preset
    from zerotui.tui.wizard.demo_hardware import workstation_24gb

    plan, hw = load_preset("llama7b-24gb-zero3-cpu"), workstation_24gb()
    spec = spec_for_plan(plan)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        estimate(plan, hw, spec=spec)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"median_ms": statistics.median(times), "p99_ms": times[int(0.99 * len(times))]}


def fit_ms(runs: int = 20) -> float:
    from zerotui.core.estimate.recommend import recommend
    from zerotui.core.plan.schema import Plan
    from zerotui.tui.wizard.demo_hardware import workstation_24gb

    plan, hw = Plan(model="llama-2-7b", stage=2), workstation_24gb()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        recommend(plan, hw)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def _ui(runs: int) -> dict[str, float]:
    from zerotui.tui.app import ZeroTuiApp
    from zerotui.tui.wizard.demo_hardware import workstation_24gb
    from zerotui.tui.wizard.budget_bar import BudgetRow

    first, keys = [], []
    shown: list[float] = []
    original_show = BudgetRow.show

    def timed_show(self, *args, **kwargs):  # when the bar's numbers are replaced (pilot.press itself
        shown.append(time.perf_counter())   # returns only after its own ~0.1 s settling pause)
        return original_show(self, *args, **kwargs)

    BudgetRow.show = timed_show
    for _ in range(runs):
        t = time.perf_counter()
        app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            first.append(time.perf_counter() - t)
            while app.budget_view.budget is None:
                if time.perf_counter() - t > 10:
                    raise TimeoutError("no budget within 10 s")
                await pilot.pause(0.01)
            await pilot.press("4")  # the ZeRO step
            await pilot.pause(0.2)
            app.screen.query_one("#f-offload_params").focus()
            await pilot.pause(0.05)
            await pilot.press("up")  # from "cpu" to "none": the weights move back onto the GPU
            row = app.screen.query_one("#budget-gpu", BudgetRow)
            before = row.need
            shown.clear()
            t = time.perf_counter()
            await pilot.press("enter")
            while row.need == before:
                if time.perf_counter() - t > 10:
                    raise TimeoutError("the budget bar did not change within 10 s")
                await pilot.pause(0.001)
            keys.append(shown[0] - t)
    BudgetRow.show = original_show
    return {"first_frame_s": statistics.median(first), "key_to_bar_ms": statistics.median(keys) * 1000}


def tmux_first_frame(runs: int = 3) -> float | None:
    """Seconds from starting `zerotui` in tmux until the hardware screen's header is on screen."""
    zerotui = Path(sys.executable).parent / "zerotui"
    if not shutil.which("tmux") or not zerotui.exists():
        return None
    times = []
    for _ in range(runs):
        name = f"zt-bench-{uuid.uuid4().hex[:8]}"
        for _attempt in range(5):  # a tmux server still shutting down after the last kill refuses once
            t = time.perf_counter()
            if subprocess.run(["tmux", "new", "-d", "-s", name, "-x", "120", "-y", "40", str(zerotui)],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
        try:
            while "this machine" not in subprocess.run(["tmux", "capture-pane", "-p", "-t", name],
                                                       capture_output=True, text=True).stdout:
                if time.perf_counter() - t > 30:
                    raise TimeoutError("no first frame in 30 s")
                time.sleep(0.01)
            times.append(time.perf_counter() - t)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("ZEROTUI_PRESETS_DIR", "/nonexistent-zerotui-bench-presets")
    imp, heavy = import_seconds(args.runs)
    result = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cpus",
        "python": platform.python_version(),
        "command": "python benchmarks/wizard_latency.py",
        "import_ui_s": imp,
        "heavy_modules_on_ui_path": heavy,
        "estimate": estimate_ms(),
        "fit_median_ms": fit_ms(),
        **asyncio.run(_ui(args.runs)),
        "tmux_first_frame_s": tmux_first_frame(),
        "load_average_1min": os.getloadavg()[0],  # the machine is shared: busy neighbours slow every number
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
