"""What `zerotui sweep --parallel N` costs and saves on the tiny model: the same sweep one trial at a time
and N at a time, each in a fresh runs folder, and writes ``benchmarks/results/sweep-parallel-cpu-<date>.json``::

    python -m benchmarks.sweep_parallel [--trials 2] [--steps 8] [--parallel 1 2] [--spares off on]
        [--repeats 1] [--out FILE]

Per sweep: the wall time of the whole `zerotui sweep --foreground`, and per trial the sweep's overhead
beyond its run (``overhead_s`` of `zerotui sweep --show --json`: from asking Optuna for the values to
telling it the result, minus the worker's own life — the launch checks, the start-up of the supervisor,
the driver's polling). On a machine without GPUs the parallel trials share the CPU cores, so each run is
slower; on a GPU machine each has its own GPU.

``--spares off on``: each sweep with the driver's spare workers off (``ZEROTUI_SPARE=0``) and on
(core/sweep/spares.py), alternating; per trial, whether a spare took its run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def _first_step_s(run: Path) -> float | None:
    """From the launch (status.json's ``launched``, written before the worker or a spare gets the run)
    to the run's first step event."""
    from zerotui.core.events.stream import read_all

    launched = json.loads((run / "status.json").read_text()).get("launched")
    first = next((e["t"] for e in read_all(run / "events.jsonl") if e.get("type") == "step"), None)
    return round(first - launched, 2) if first is not None and launched else None


def one_sweep(parallel: int, trials: int, steps: int, spares: str = "off") -> dict:
    runs = Path(tempfile.mkdtemp(prefix=f"zt-sweep-p{parallel}-"))
    # Spares in a cache folder of this sweep's (none left over from another), the data cache shared
    # (tokenised once for all sweeps, as on a user's machine).
    env = dict(os.environ, ZEROTUI_RUNS_DIR=str(runs), ZEROTUI_PRESETS_DIR=str(runs / "presets"),
               ZEROTUI_SPARE="1" if spares == "on" else "0")
    if spares == "on":
        from zerotui.core.paths import cache_root

        (runs / "cache").mkdir()
        for shared in ("tokenised", "tiny"):
            (cache_root() / shared).mkdir(parents=True, exist_ok=True)
            (runs / "cache" / shared).symlink_to(cache_root() / shared, target_is_directory=True)
        env["ZEROTUI_CACHE_DIR"] = str(runs / "cache")
    argv = [sys.executable, "-m", "zerotui.cli.main", "sweep", "tiny-cpu-demo", "--trials", str(trials),
            "--parallel", str(parallel), "--space", "lr=1e-4..3e-3:log", "--max-steps", str(steps),
            "--eval-interval", "4", "--no-save-final", "--foreground"]
    t = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    show = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "sweep", "--show", "--json"], env=env,
                          check=True, capture_output=True, text=True)
    s = json.loads(show.stdout)
    per = [{**{k: tr[k] for k in ("number", "state", "wall_s", "run_s", "overhead_s", "slot")},
            "spare": f"takes run {runs / tr['run']}" in (runs / tr["run"] / "worker.log").read_text(),
            "first_step_s": _first_step_s(runs / tr["run"])}
           for tr in s["trials"]]
    over = [tr["overhead_s"] for tr in per if tr["overhead_s"] is not None]
    firsts = [tr["first_step_s"] for tr in per if tr["first_step_s"] is not None]
    return {"parallel": parallel, "spares": spares, "first_step_s_median": statistics.median(firsts),
            "first_step_s_after_the_first_trial": [tr["first_step_s"] for tr in per[1:]], "sweep_wall_s": round(wall, 1), "trials": per,
            "overhead_s_median": statistics.median(over) if over else None,
            "run_s_median": statistics.median(tr["run_s"] for tr in per if tr["run_s"] is not None),
            "sweep_wall_s_per_trial": round(wall / trials, 1), "load_avg_1m_after": os.getloadavg()[0]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--parallel", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--spares", nargs="+", choices=("off", "on"), default=["off"])
    ap.add_argument("--repeats", type=int, default=1, help="each repeat runs the contenders in reverse order")
    ap.add_argument("--out", type=Path, help="results file (default benchmarks/results/sweep-parallel-cpu-DATE.json)")
    ap.add_argument("--note", default="", help="how the machine was set up (recorded in the results)")
    args = ap.parse_args()
    sweeps = []
    contenders = [(p, sp) for p in args.parallel for sp in args.spares]
    for r in range(args.repeats):
        for p, sp in (contenders if r % 2 == 0 else contenders[::-1]):
            sweeps.append({"repeat": r, **one_sweep(p, args.trials, args.steps, sp)})
            print(json.dumps(sweeps[-1]), flush=True)
    import deepspeed
    import optuna
    import torch

    out = args.out or RESULTS / f"sweep-parallel-cpu-{time.strftime('%Y-%m-%d')}.json"
    out.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d"),
        "command": f"python -m benchmarks.sweep_parallel --trials {args.trials} --steps {args.steps} "
                   f"--parallel {' '.join(map(str, args.parallel))} --spares {' '.join(args.spares)} "
                   f"--repeats {args.repeats}",
        "machine": f"{os.cpu_count()} CPUs, no GPU", "note": args.note, "python": sys.version.split()[0],
        "torch": torch.__version__, "deepspeed": deepspeed.__version__, "optuna": optuna.__version__,
        "sweeps": sweeps}, indent=2) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
