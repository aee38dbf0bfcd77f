"""Helpers for tests that train the tiny model with real DeepSpeed: make a run folder (with the files the
launch writes), run ``engine_runner.py`` on it in a fresh process, read its events."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from zerotui.core.events.stream import read_all, validate
from zerotui.core.model.spec import spec_for_plan
from zerotui.core.plan.schema import load_plan
from zerotui.core.run.folder import RunPaths
from zerotui.core.run.prepare import DS_CONFIG, launch_files, write_launch_files

RUNNER = Path(__file__).with_name("engine_runner.py")
#: A fresh machine builds DeepSpeed's CPU ops on first use (shm comm ~50 s, cpu_adam ~30 s).
RUN_TIMEOUT = 900

#: Small and quick: ~0.05 s a step on 2 cores once DeepSpeed is up.
BASE_PLAN: dict[str, Any] = dict(model="tiny", data="sample", micro_batch=16, seq_len=128, lr=3e-3,
                                 warmup_steps=3, max_steps=20, log_interval=5, save_interval=10,
                                 save_minutes=0, eval_interval=0, eval_batches=4, seed=42)


def make_run(root: Path, world: int = 1, **fields: Any) -> RunPaths:
    """A run folder as the launch leaves it (plan.yaml, ds_config.json for ``world`` processes)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "checkpoints").mkdir(exist_ok=True)
    plan = {**BASE_PLAN, **fields}
    (root / "plan.yaml").write_text(yaml.safe_dump(plan), encoding="utf-8")
    paths = RunPaths(root)
    launch_for(paths, world)
    return paths


def launch_for(paths: RunPaths, world: int) -> None:
    """Write ds_config.json for ``world`` processes, as ``run.start`` does (through ``run.prepare``)."""
    plan = load_plan(paths.plan)
    files = launch_files(plan, world, spec_for_plan(plan), paths.root)
    write_launch_files(paths, {DS_CONFIG: files[DS_CONFIG]})


def run_engine(paths: RunPaths, *args: str, cache: Path, timeout: float = RUN_TIMEOUT,
               env: dict[str, str] | None = None) -> dict:
    """``env``: more variables for the runner (engine_runner.py's injected faults)."""
    env = dict(os.environ, ZEROTUI_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    proc = subprocess.run([sys.executable, str(RUNNER), str(paths.root), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    result_file = paths.root / "result.json"
    assert proc.returncode == 0 and result_file.exists(), f"runner failed:\n{proc.stderr[-4000:]}"
    result = json.loads(result_file.read_text())
    result["stderr"] = proc.stderr
    result_file.unlink()
    return result


def run_engine_ranks(paths: RunPaths, world: int, *args: str, cache: Path,
                     timeout: float = RUN_TIMEOUT) -> list[dict]:
    """The runner as ``world`` CPU processes (gloo) rendezvousing like the DeepSpeed launcher's ranks."""
    import socket

    launch_for(paths, world)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs, logs = [], []
    for rank in range(world):
        env = dict(os.environ, ZEROTUI_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1", RANK=str(rank),
                   LOCAL_RANK=str(rank), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        # Files, not pipes: a rank blocked on a full stderr pipe would stall the others' collectives.
        logs.append(paths.root / f"rank{rank}.log")
        with open(logs[-1], "ab") as log:
            procs.append(subprocess.Popen([sys.executable, str(RUNNER), str(paths.root), *args], env=env,
                                          stdout=log, stderr=subprocess.STDOUT))
    for p in procs:
        p.wait(timeout=timeout)
    results = []
    for rank, p in enumerate(procs):
        f = paths.root / ("result.json" if rank == 0 else f"result-rank{rank}.json")
        assert p.returncode == 0 and f.exists(), f"rank {rank} failed:\n{logs[rank].read_text()[-3000:]}"
        results.append(json.loads(f.read_text()))
        f.unlink()
    return results


def events(paths: RunPaths, type_: str | None = None) -> list[dict]:
    evs = read_all(paths.events)
    return [e for e in evs if type_ is None or e["type"] == type_]


def assert_valid_stream(paths: RunPaths) -> list[dict]:
    evs = events(paths)
    problems = [(e.get("type"), p) for e in evs for p in validate(e)]
    assert not problems, problems
    return evs


def losses(paths: RunPaths) -> dict[int, float]:
    """step -> loss of every step event (the last one wins when a resumed run repeats a step)."""
    return {e["step"]: e["loss"] for e in events(paths, "step")}
