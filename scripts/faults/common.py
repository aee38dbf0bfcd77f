"""What the fault scripts share: start and resume runs the way a user does (the real ``zerotui`` CLI,
the real detached worker, the real DeepSpeed engine on the tiny model), watch the run folder the way a
client does, kill things, and check the event stream afterwards.

Nothing here reaches into a worker: every fact comes from the run folder (events.jsonl, status.json,
checkpoints/), so a check that passes here passes for any client.
"""
from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from zerotui.core.train.checkpoint import list_checkpoints, newest_complete
from zerotui.core.events.stream import read_all, read_new, validate
from zerotui.core.run.folder import RunPaths, pid_alive, read_status

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
PY = sys.executable

#: The tiny-cpu-demo preset (ZeRO-2, fp32, the built-in ~1M-weight Llama) with a long schedule, every
#: step logged and a checkpoint every 10 steps: ~0.1 s a step on this 2-core machine.
BASE_OPTIONS = ["--max-steps", "600", "--log-interval", "1", "--save-interval", "10", "--keep-checkpoints", "2",
                "--eval-interval", "0"]


def env(runs_dir: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "ZEROTUI_RUNS_DIR": str(runs_dir), "ZEROTUI_TELEMETRY_S": "1",
            "PYTHONDONTWRITEBYTECODE": "1", **extra}


def zerotui(runs_dir: Path, *argv: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess:
    """The real CLI, as a user runs it."""
    return subprocess.run([PY, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          env=env(runs_dir, **extra), timeout=timeout, cwd=str(runs_dir))


def train(runs_dir: Path, *options: str, preset: str = "tiny-cpu-demo", **extra: str) -> RunPaths:
    runs_dir.mkdir(parents=True, exist_ok=True)
    proc = zerotui(runs_dir, "train", preset, "--runs-dir", str(runs_dir), "--json", *options, **extra)
    if proc.returncode != 0:
        raise RuntimeError(f"zerotui train failed ({proc.returncode}): {proc.stderr.strip()}")
    return RunPaths(Path(json.loads(proc.stdout)["path"]))


def resume(paths: RunPaths, **extra: str) -> subprocess.CompletedProcess:
    return zerotui(paths.root.parent, "resume", paths.name, "--runs-dir", str(paths.root.parent), "--json",
                   **extra)


def worker_pid(paths: RunPaths, timeout: float = 30) -> int:
    """The run's pid in status.json: its supervisor, the leader of the run's own session."""
    pid = wait_for(lambda: read_status(paths).get("pid"), timeout, "the run's pid in status.json")
    return int(pid)


def wait_for(cond: Callable[[], Any], timeout: float, what: str, poll: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(poll)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def kill9(pid: int) -> None:
    """SIGKILL to every process of the run at once (its supervisor leads the session): a crash that
    leaves nobody to write the end, so the run reads as lost."""
    os.killpg(pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(pid), 10, f"pid {pid} to die")


def wait_finished(paths: RunPaths, timeout: float = 600) -> dict:
    """The run_finished event, once the worker wrote it and status.json agrees."""
    def done() -> Optional[dict]:
        fin = [e for e in read_all(paths.events) if e["type"] == "run_finished"]
        st = read_status(paths)
        return fin[-1] if fin and st.get("state") == fin[-1]["state"] else None
    return wait_for(done, timeout, f"run_finished in {paths.name}", poll=0.25)


class Tail:
    """New events of a run as they arrive (``read_new``, like every client)."""

    def __init__(self, paths: RunPaths) -> None:
        self.paths, self.offset, self.events = paths, 0, []

    def poll(self) -> list[dict]:
        new, self.offset = read_new(self.paths.events, self.offset)
        self.events += new
        return new

    def last(self, type_: str) -> Optional[dict]:
        return next((e for e in reversed(self.events) if e["type"] == type_), None)


def checkpoint_state(paths: RunPaths) -> dict:
    cks = list_checkpoints(paths.checkpoints)
    newest = newest_complete(paths.checkpoints)
    return {"complete": [c.tag for c in cks if c.complete], "torn": [c.tag for c in cks if not c.complete],
            "newest_complete": newest.tag if newest else None,
            "latest_file": _read(paths.checkpoints / "latest")}


def _read(p: Path) -> Optional[str]:
    try:
        return p.read_text().strip()
    except OSError:
        return None


# -- the event stream, checked ---------------------------------------------------------------------

def next_logged(step: int, log_interval: int, total: int) -> int:
    """The first step a worker that starts after ``step`` reports: the next multiple of log_interval
    (or the last step)."""
    return min(step - step % log_interval + log_interval, total)


def expected_steps(log_interval: int, total: int) -> list[int]:
    steps = list(range(log_interval, total + 1, log_interval))
    return steps if steps and steps[-1] == total else steps + [total]


def lives(events: list[dict]) -> list[dict]:
    """The stream cut at each run_started: one entry per worker that reached training.

    Each: start_step, resumed_from, steps (step events in order), losses, and first_t / last_t."""
    out: list[dict] = []
    for ev in events:
        if ev["type"] == "run_started":
            out.append({"start_step": int(ev.get("start_step") or 0), "resumed_from": ev.get("resumed_from"),
                        "total": int(ev["total_steps"]), "steps": [], "losses": {}, "t": ev["t"]})
        elif ev["type"] == "step" and out:
            out[-1]["steps"].append(int(ev["step"]))
            out[-1]["losses"][int(ev["step"])] = ev["loss"]
    return out


def check_stream(paths: RunPaths, log_interval: int) -> dict:
    """The continuity check of docs/reliability.md ("kill -9"):

    1. every event validates against the schema;
    2. in each worker's life the step events are strictly increasing multiples of log_interval (or the
       last step), and a resumed life's first step event is ``next_logged(start_step)``: the steps between
       its checkpoint and the kill are reported again, nothing is skipped;
    3. a life's start_step is the step of the checkpoint it resumed from;
    4. keeping, of each life, only the steps up to the next life's start_step (the rest were superseded:
       redone by the next worker), the stream holds every expected step exactly once;
    5. a superseded step's loss equals the redone one (same data, same RNG: the resumed worker repeats
       the same computation), within ``LOSS_RTOL``.
    """
    evs = read_all(paths.events)
    problems = [f"{e.get('type')}: {p}" for e in evs for p in validate(e)]
    ls = lives(evs)
    if not ls:
        return {"ok": False, "problems": problems + ["no run_started"]}
    total = ls[0]["total"]
    for i, life in enumerate(ls):
        s = life["steps"]
        if any(b <= a for a, b in zip(s, s[1:])):
            problems.append(f"life {i}: steps not increasing")
        bad = [x for x in s if x % log_interval and x != total]
        if bad:
            problems.append(f"life {i}: steps {bad[:5]} off the log interval")
        if i > 0 and s and s[0] != next_logged(life["start_step"], log_interval, total):
            problems.append(f"life {i}: first step {s[0]} after a resume from {life['start_step']}")
        rf = life["resumed_from"]
        if rf is not None and str(rf) != f"step{life['start_step']}":
            problems.append(f"life {i}: resumed_from {rf} but start_step {life['start_step']}")
    kept: list[int] = []
    superseded, diffs = 0, []
    for i, life in enumerate(ls):
        cut = ls[i + 1]["start_step"] if i + 1 < len(ls) else None
        for s in life["steps"]:
            if cut is None or s <= cut:
                kept.append(s)
            else:
                superseded += 1
                redo = next((later["losses"].get(s) for later in ls[i + 1:] if s in later["losses"]), None)
                a, b = life["losses"][s], redo
                if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                    diffs.append(abs(a - b) / max(abs(b), 1e-12))
    want = expected_steps(log_interval, total)
    finished = [e for e in evs if e["type"] == "run_finished"]
    if finished and finished[-1]["state"] == "completed" and kept != want:
        missing = sorted(set(want) - set(kept))[:10]
        twice = sorted({s for s in kept if kept.count(s) > 1})[:10]
        problems.append(f"kept steps differ from the expected: missing {missing}, twice {twice}")
    worst = max(diffs) if diffs else None
    if worst is not None and worst > LOSS_RTOL:
        problems.append(f"a redone step's loss differs by {worst:.2e} (relative)")
    return {"ok": not problems, "problems": problems[:20], "lives": len(ls), "superseded_step_events": superseded,
            "kept_step_events": len(kept), "expected_step_events": len(want),
            "max_rel_loss_diff_redone": worst, "events": len(evs)}


#: Redone steps must give the same loss: the resumed worker restores weights, optimizer, scheduler, data
#: position and RNG. They agree to ~1e-7 relative, not to the bit (measured: 2.3e-7 at most over 32 redone
#: steps, faults-kill9.json): float sums on the CPU are not bit-reproducible from one process to the next.
#: A different batch or a step applied twice moves the loss by 1e-2 or more on this model.
LOSS_RTOL = 1e-5


# -- results ------------------------------------------------------------------------------------------

def machine_note() -> dict:
    return {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "load_avg_start": list(os.getloadavg())}


def write_result(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {**payload, "load_avg_end": list(os.getloadavg()),
               "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    out = RESULTS / f"faults-{name}.json"
    out.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return out


def summary_line(name: str, trials: Iterable[dict]) -> str:
    trials = list(trials)
    ok = sum(1 for t in trials if t.get("ok"))
    return f"{name}: {ok}/{len(trials)} trials ok"


# -- runs started through another worker entry point (fault_worker.py) ------------------------------

FAULT_WORKER = Path(__file__).with_name("fault_worker.py")


def _fault_worker_command(extra_env: dict[str, str]):
    """``core.run.start._worker_command`` for the fault worker: the same supervisor, env and PATH, but
    ``python scripts/faults/fault_worker.py RUN_DIR`` instead of ``python -m zerotui.core.run.worker`` as its
    child."""
    from zerotui.core.run import start as launch

    original = launch._worker_command

    def command(plan, paths, hardware, resume):
        argv, environ = original(plan, paths, hardware, resume)
        cut = argv.index("--") + 1
        assert argv[cut + 1:cut + 3] == ["-m", "zerotui.core.run.worker"], argv  # one process: the worker
        return [*argv[:cut + 1], str(FAULT_WORKER), *argv[cut + 3:]], {**environ, **extra_env}
    return command


def start_with_faults(runs_dir: Path, plan: Any, fault_env: dict[str, str], resume_paths: Optional[RunPaths] = None
                      ) -> RunPaths:
    """``start_run`` / ``resume_run`` (preflight, run folder, detached worker) with the fault worker."""
    from unittest import mock

    from zerotui.core.run import start as launch

    os.environ.setdefault("ZEROTUI_TELEMETRY_S", "1")
    with mock.patch.object(launch, "_worker_command", _fault_worker_command(fault_env)):
        if resume_paths is not None:
            return launch.resume_run(resume_paths)
        return launch.start_run(plan, runs_dir=runs_dir)
