"""The terminal of a TUI goes away (SSH drop): a tmux session running ``zerotui attach`` is killed, which
sends SIGHUP to the dashboard, again and again, while one real run trains. The run must go on, the
dashboard process must end (not linger without a terminal), and a new attach must show everything.

    python scripts/faults/sighup.py [--hups 10] [--launch-in-tmux 2] [--seed 3]

Per trial: ``tmux new-session -d`` running ``zerotui attach RUN`` (160x48), a random 1-6 s of watching,
``tmux kill-session``. Checked: the attach process exits within 15 s; the worker pid is unchanged and
alive; new step events keep coming; the next attach shows the current step (the stat panel's
"step N / TOTAL" within 3 logged steps of the newest step event) and the same number of checkpoints
as the stream holds. ``--launch-in-tmux`` more trials start a fresh run from a shell inside the tmux
session (``zerotui train ... && zerotui attach``) and kill that session: the run must survive its
launching terminal too.

Writes ``benchmarks/results/faults-sighup.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from zerotui.core.events.stream import read_all  # noqa: E402
from zerotui.core.run.folder import RunPaths, list_runs, pid_alive, read_status  # noqa: E402

ZEROTUI = str(Path(sys.executable).with_name("zerotui"))
OPTIONS = ["--max-steps", "3000", "--log-interval", "5", "--save-interval", "50", "--keep-checkpoints", "2",
           "--eval-interval", "0"]
STEP_RE = re.compile(r"step\s+([\d,]+) / ([\d,]+)")
CKPT_RE = re.compile(r"checkpoint step (\d+) at [^(]*\((\d+)\)")


def tmux(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=check)


def open_session(name: str, command: str, runs: Path) -> int:
    shell = f"export ZEROTUI_RUNS_DIR={shlex.quote(str(runs))} ZEROTUI_TELEMETRY_S=1; {command}"
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", shell)
    return int(tmux("list-panes", "-t", name, "-F", "#{pane_pid}").stdout.split()[0])


def capture(name: str) -> str:
    return tmux("capture-pane", "-p", "-t", name, check=False).stdout


def shown(name: str, timeout: float = 60) -> tuple[int, int, str]:
    """(step, checkpoints) the dashboard in session ``name`` shows, once it shows them."""
    def read():
        text = capture(name)
        m = STEP_RE.search(text)
        return (m, text) if m else None
    m, text = common.wait_for(read, timeout, f"the dashboard in {name}", poll=0.25)
    c = CKPT_RE.search(text)
    return int(m.group(1).replace(",", "")), int(c.group(2)) if c else 0, text


def descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True).stdout.split("\n")
    children: dict[int, list[int]] = {}
    for line in out:
        if line.strip():
            a, b = (int(x) for x in line.split())
            children.setdefault(b, []).append(a)
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            seen.append(c)
            todo.append(c)
    return seen


def hup_trial(i: int, name: str, paths: RunPaths, runs: Path, rng: random.Random, launched: bool) -> dict:
    """Watch for a while, kill the session, check the run and the processes."""
    time.sleep(rng.uniform(1.0, 6.0))
    pane = int(tmux("list-panes", "-t", name, "-F", "#{pane_pid}").stdout.split()[0])
    tree = [pane, *descendants(pane)]
    worker = int(read_status(paths)["pid"])
    steps_before = [e["step"] for e in read_all(paths.events) if e["type"] == "step"]
    t_kill = time.monotonic()
    tmux("kill-session", "-t", name)
    try:
        common.wait_for(lambda: not any(pid_alive(p) for p in tree), 15, "the attach process to end", poll=0.1)
        exit_s = round(time.monotonic() - t_kill, 2)
    except TimeoutError:
        exit_s = None
    lingering = [p for p in tree if pid_alive(p)]
    last = steps_before[-1] if steps_before else 0
    common.wait_for(lambda: any(e["type"] == "step" and e["step"] > last for e in read_all(paths.events)[-20:]),
                    120, "steps after the hangup")
    trial = {"trial": i, "launched_in_session": launched, "attach_exit_s": exit_s, "lingering": lingering,
             "worker_pid_same": int(read_status(paths)["pid"]) == worker, "worker_alive": pid_alive(worker),
             "worker_in_killed_tree": worker in tree, "step_at_hangup": last}
    # A new attach shows everything.
    again = f"{name}-again"
    open_session(again, f"{ZEROTUI} attach {paths.name}", runs)
    step, ckpts, _ = shown(again)
    evs = read_all(paths.events)
    newest = max(e["step"] for e in evs if e["type"] == "step")
    n_ckpt = sum(1 for e in evs if e["type"] == "checkpoint")
    tmux("kill-session", "-t", again)
    trial.update(reattach_step=step, stream_step=newest, reattach_checkpoints=ckpts, stream_checkpoints=n_ckpt)
    trial["ok"] = (exit_s is not None and not lingering and trial["worker_pid_same"] and trial["worker_alive"]
                   and not trial["worker_in_killed_tree"] and 0 <= newest - step <= 15 and abs(n_ckpt - ckpts) <= 1)
    return trial


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hups", type=int, default=10)
    ap.add_argument("--launch-in-tmux", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    note = common.machine_note()
    tmp = tempfile.TemporaryDirectory(prefix="zerotui-hup-")
    runs = Path(tmp.name)
    trials = []
    paths = common.train(runs, *OPTIONS)
    common.wait_for(lambda: any(e["type"] == "step" for e in read_all(paths.events)), 300, "the first step")
    for i in range(args.hups):
        name = f"zt-hup-{os.getpid()}-{i}"
        open_session(name, f"{ZEROTUI} attach {paths.name}", runs)
        shown(name)
        trials.append(hup_trial(i, name, paths, runs, rng, launched=False))
        print(json.dumps(trials[-1]), flush=True)
    common.zerotui(runs, "stop", paths.name, "--runs-dir", str(runs))
    first_run = paths
    for j in range(args.launch_in_tmux):
        name = f"zt-hup-{os.getpid()}-launch{j}"
        before = {r.name for r in list_runs(runs)}
        train = " ".join(shlex.quote(a) for a in [ZEROTUI, "train", "tiny-cpu-demo", "--runs-dir", str(runs), *OPTIONS])
        open_session(name, f"{train} && {ZEROTUI} attach", runs)
        new = common.wait_for(lambda: [r for r in list_runs(runs) if r.name not in before], 60, "the new run")
        paths = new[0].paths
        shown(name, timeout=300)
        trials.append(hup_trial(args.hups + j, name, paths, runs, rng, launched=True))
        print(json.dumps(trials[-1]), flush=True)
        common.zerotui(runs, "stop", paths.name, "--runs-dir", str(runs))
    ends = [common.wait_finished(p, 300)["state"] for p in (first_run, paths)]
    ok = all(t["ok"] for t in trials) and all(s == "stopped" for s in ends)
    result = {"command": " ".join(["python", *sys.argv]), "machine": note, "ok": ok, "trials_total": len(trials),
              "trials_ok": sum(1 for t in trials if t["ok"]), "runs_ended": ends,
              "attach_exit_s_max": max((t["attach_exit_s"] or 99) for t in trials), "trials": trials}
    out = common.write_result("sighup", result)
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=1), "->", out)
    tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
