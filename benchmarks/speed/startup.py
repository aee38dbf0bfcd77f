"""Start-up to the first step, through the product: a new run and a resume, repeated on one machine.

    python -m benchmarks.speed.startup --out startup.json --repeats 3          # on the GPU machine
    python -m benchmarks.speed.startup --dry-run --out /tmp/startup-dry.json    # the tiny shape on the CPU

Each repeat starts ``zerotui train PLAN`` (detached, as a user does; the 1.1B full fine-tune as ``fit``
picks it, or the tiny shape with --dry-run), waits for its second step event, stops it gracefully
(``zerotui stop --wait``: a checkpoint is written), then ``zerotui train --resume RUN`` and waits for the
resumed run's first step before stopping it without a checkpoint. Reported per start: seconds from the
command to the CLI's return ("launch"), to the worker's first event, to each phase and to the first step
event. The first repeat on a fresh machine is the cold start (DeepSpeed's ops are built then);
``--shape cpu-200m --drop-caches --prefetch both`` measures the checkpoint read-ahead
(core/train/prefetch.py) on a CPU machine: a 217M-weight Llama whose checkpoint is 3.5 GB, the page
cache dropped before every start, each repeat with read-ahead off and on (ZEROTUI_PREFETCH=0/1).
``--spare both`` alternates starts with a spare worker ready (core/run/spare.py: started and waited for
before the command, as the wizard starts one while the user plans) and without one.
``--import-times`` runs one more repeat with PYTHONPROFILEIMPORTTIME=1 and keeps the slowest imports of
each process (CLI, supervisor, worker) to show where the time goes.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.seed_scenarios.data import write_data
from benchmarks.seed_scenarios.models import build_model
from benchmarks.seed_scenarios.run import _versions
from benchmarks.seed_scenarios.shapes import SHAPES


def _cli(*args: str, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)


def _events(run: Path) -> list[dict]:
    from zerotui.core.events.stream import read_all

    return read_all(run / "events.jsonl") if (run / "events.jsonl").exists() else []


def _wait_step(run: Path, after_t: float, count: int, timeout: float) -> list[dict]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        evs = [e for e in _events(run) if e["t"] >= after_t]
        if sum(e["type"] == "step" for e in evs) >= count or any(e["type"] == "run_finished" for e in evs):
            return evs
        time.sleep(0.2)
    raise SystemExit(f"{run}: no step within {timeout:.0f} s")


def _timeline(evs: list[dict], t0: float, launch_s: float) -> dict[str, Any]:
    phases: list[tuple[str, float]] = [("launch (CLI returned)", round(launch_s, 2))]
    seen: set[str] = set()
    if evs:
        phases.append(("worker's first event", round(evs[0]["t"] - t0, 2)))
    for e in evs:
        name = e.get("name") if e["type"] == "phase" else e["type"]
        if e["type"] in ("phase", "run_started") and name not in seen:
            seen.add(name)
            phases.append((name, round(e["t"] - t0, 2)))
        if e["type"] == "step":
            phases.append(("first step event", round(e["t"] - t0, 2)))
            return {"phases_s": phases, "first_step_s": round(e["t"] - t0, 2)}
    return {"phases_s": phases, "first_step_s": None,
            "finished": next((e for e in evs if e["type"] == "run_finished"), None)}


def _imports(text: str, top: int = 12) -> list[tuple[str, float]]:
    """The slowest top-level imports in PYTHONPROFILEIMPORTTIME output (cumulative seconds)."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)", line)
        if m and len(m.group(2)) <= 2:  # the top level of one import statement and its first children
            rows.append((m.group(3), round(int(m.group(1)) / 1e6, 2)))
    return sorted(rows, key=lambda r: -r[1])[:top]


def one_start(args: list[str], env: dict, runs: Path, resume_of: Path | None) -> tuple[Path, dict[str, Any]]:
    before = {p.name for p in runs.iterdir()} if runs.exists() else set()
    t0 = time.time()
    r = _cli("train", *args, "--json", env=env)
    launch_s = time.time() - t0
    if r.returncode != 0:
        raise SystemExit(f"train {' '.join(args)} exited {r.returncode}: {(r.stdout + r.stderr)[-800:]}")
    run = resume_of or next(runs / n for n in sorted({p.name for p in runs.iterdir()} - before))
    evs = _wait_step(run, t0, 1, timeout=900)
    return run, {**_timeline(evs, t0, launch_s), "cli_stderr": r.stderr}


def _spare(env: dict) -> float:
    """Start a spare worker for this environment and wait until it has imported its libraries (as the
    wizard's does while the user plans); the seconds that took, which are not part of the start."""
    t0 = time.time()
    r = _cli("spare", "start", "--wait", "600", "--json", env=env)
    if r.returncode != 0:
        raise SystemExit(f"zerotui spare start exited {r.returncode}: {(r.stdout + r.stderr)[-800:]}")
    return round(time.time() - t0, 2)


def _drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("1\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models-dir", type=Path, default=None)
    ap.add_argument("--import-times", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--shape", default=None, help="a shape of benchmarks/seed_scenarios/shapes.py, or cpu-200m")
    ap.add_argument("--drop-caches", action="store_true", help="drop the page cache before each start (root)")
    ap.add_argument("--prefetch", choices=("on", "off", "both"), default="on")
    ap.add_argument("--spare", choices=("on", "off", "both"), default="off",
                    help="a spare worker ready before each start (`zerotui spare start --wait`), none, or both")
    a = ap.parse_args()
    from zerotui.core.estimate.recommend import recommend
    from zerotui.core.hardware.detect import detect
    from zerotui.core.plan.schema import plan_from_dict

    work = Path(tempfile.mkdtemp(prefix="zt-startup-"))
    shape = a.shape or ("tiny" if a.dry_run else "1b")
    cpu = a.dry_run or shape == "cpu-200m"
    if shape == "cpu-200m":
        SHAPES["cpu-200m"] = {**SHAPES["1b"], "hidden_size": 1024, "intermediate_size": 2816,
                              "num_hidden_layers": 12, "num_attention_heads": 16, "num_key_value_heads": 16}
    models = a.models_dir or work / "models"
    models.mkdir(parents=True, exist_ok=True)
    folder = models / f"llama-{shape}"
    built = build_model(shape, folder)
    data = write_data(work / "data.jsonl", rows=400 if a.dry_run else 3000, words=200 if a.dry_run else 1400)
    fields = {"name": "startup", "model": str(folder), "data": str(data), "data_format": "text", "gpus": 1,
              "method": "full", "precision": "fp32" if cpu else "bf16", "micro_batch": 2 if cpu else 16,
              "grad_accum": 1, "seq_len": (64 if shape == "cpu-200m" else 128) if cpu else 1024, "max_steps": 100000, "log_interval": 1,
              "save_interval": 0, "save_minutes": 0, "save_final": False, "eval_fraction": 0.0, "lr": 1e-4,
              "warmup_steps": 0}
    plan = plan_from_dict(fields, "startup")
    recs = recommend(plan, detect(probe_disks=False))
    plan = recs[0].plan if recs else plan
    plan_file = work / "startup.yaml"
    plan_file.write_text(plan.to_yaml())
    runs = work / "runs"
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "versions": _versions(),
                           "model": {"shape": shape, **built}, "plan": plan.to_dict(), "starts": []}
    repeats = a.repeats + (1 if a.import_times else 0)
    both = {"on": ["1"], "off": ["0"], "both": ["0", "1"]}
    settings = [(p, sp) for p in both[a.prefetch] for sp in both[a.spare]]
    for rep, (pre, spare) in ((r, c) for r in range(repeats) for c in (settings if r % 2 == 0 else settings[::-1])):
        env = dict(os.environ, PYTHONUNBUFFERED="1", ZEROTUI_PREFETCH=pre, ZEROTUI_SPARE=spare)
        traced = a.import_times and rep == repeats - 1
        if traced:
            env["PYTHONPROFILEIMPORTTIME"] = "1"
        if a.drop_caches:
            _drop_caches()
        spare_s = _spare(env) if spare == "1" else None
        run, new = one_start([str(plan_file), "--force", "--runs-dir", str(runs)], env, runs, None)
        _wait_step(run, 0, 2, timeout=600)
        stop = _cli("stop", str(run), "--wait", "--runs-dir", str(runs), env=env)
        row = {"repeat": rep, "kind": "new run", "prefetch": pre == "1", "spare": spare == "1",
               "spare_ready_after_s": spare_s, "import_traced": traced, **new}
        if traced:
            row["slowest_imports"] = {"cli": _imports(new.pop("cli_stderr")),
                                      "supervisor+worker (worker.log)": _imports((run / "worker.log").read_text())}
        row.pop("cli_stderr", None)
        out["starts"].append(row)
        if stop.returncode != 0:
            row["stop"] = (stop.stdout + stop.stderr)[-500:]
        shown = ("repeat", "kind", "prefetch", "spare", "first_step_s", "phases_s")
        print(json.dumps({k: row[k] for k in shown}), flush=True)
        if a.drop_caches:
            _drop_caches()
        spare_s = _spare(env) if spare == "1" else None
        _, res = one_start(["--resume", str(run), "--runs-dir", str(runs)], env, runs, run)
        _cli("stop", str(run), "--now", "--wait", "--runs-dir", str(runs), env=env)
        res.pop("cli_stderr", None)
        rrow = {"repeat": rep, "kind": "resume", "prefetch": pre == "1", "spare": spare == "1",
                "spare_ready_after_s": spare_s, "import_traced": traced, **res}
        out["starts"].append(rrow)
        print(json.dumps({k: rrow[k] for k in shown}), flush=True)
        a.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
