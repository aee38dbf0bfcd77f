"""``kill -9`` of a real worker at random points, then ``zerotui resume``, again and again; afterwards the
whole event stream is checked (``common.check_stream``) and read the way the dashboard reads it.

    python scripts/faults/kill9.py [--kills 12] [--seed 1]

One run of the tiny-cpu-demo preset (ZeRO-2 on the CPU) with 600 steps, every step logged, a checkpoint
every 10 steps. Each kill lands at a random moment: one in five during start-up (importing, tokenising,
loading, initialising DeepSpeed), the rest 1-25 steps (plus a random part of a step) after the step
the worker started from: before, between and during checkpoint saves. After each kill: the run must read as ``lost``; ``zerotui resume`` must restart it
from the newest complete checkpoint (checked against the checkpoints folder at the time of the kill).
After the last kill the run trains to the end.

Writes ``benchmarks/results/faults-kill9.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from zerotui.core.events.stream import read_all  # noqa: E402
from zerotui.core.events.reader import load_history  # noqa: E402
from zerotui.core.run.folder import run_state  # noqa: E402

LOG_INTERVAL = 1


def life_started(paths, n_before: int) -> bool:
    return sum(1 for e in read_all(paths.events) if e["type"] == "run_started") > n_before


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep the run folder here (default: a temporary folder)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    note = common.machine_note()
    tmp = tempfile.TemporaryDirectory(prefix="zerotui-kill9-")
    runs = args.keep or Path(tmp.name)
    paths = common.train(runs, *common.BASE_OPTIONS)
    pid = common.worker_pid(paths)
    kills = []
    for i in range(args.kills):
        n_started = sum(1 for e in read_all(paths.events) if e["type"] == "run_started")
        in_startup = rng.random() < 0.2
        if in_startup:
            time.sleep(rng.uniform(0.3, 7.0))
        else:
            # A random step 1-25 past where this worker starts (a checkpoint every 10: kills land before,
            # between and right after saves), then a random part of a step: steps, not seconds, so the
            # spread holds whatever else loads this machine.
            started = common.wait_for(lambda: life_started(paths, n_started) and
                                      [e for e in read_all(paths.events) if e["type"] == "run_started"][-1],
                                      300, "training to start")
            target = int(started.get("start_step") or 0) + rng.randint(1, 25)
            common.wait_for(lambda: any(e["type"] == "step" and e["step"] >= target and e["t"] > started["t"]
                                        for e in read_all(paths.events)[-40:]), 300, f"step {target}")
            time.sleep(rng.uniform(0.0, 0.3))
        evs = read_all(paths.events)
        if any(e["type"] == "run_finished" for e in evs[-3:]):
            print("the run finished before the planned kills; use more steps")
            break
        last = next((e for e in reversed(evs) if e["type"] in ("phase", "step", "checkpoint", "run_started")), {})
        steps = [e["step"] for e in evs if e["type"] == "step"]
        common.kill9(pid)
        ck = common.checkpoint_state(paths)
        state = common.wait_for(lambda: run_state(paths) == "lost" and "lost", 40, "the run to read as lost")
        where = (f"phase {last.get('name')}" if last.get("type") == "phase" else last.get("type", "nothing yet"))
        t_resume = time.time()
        proc = common.resume(paths)
        if proc.returncode != 0:
            kills.append({"kill": i, "ok": False, "error": proc.stderr.strip()})
            break
        pid = int(json.loads(proc.stdout)["pid"])
        kill = {"kill": i, "during": where, "in_startup": in_startup, "last_step_seen": steps[-1] if steps else None,
                "checkpoints_at_kill": ck, "state_after_kill": state, "t_resume": t_resume}
        kills.append(kill)
        print(f"kill {i}: after {where}, step {kill['last_step_seen']}, newest complete "
              f"{ck['newest_complete']}, torn {ck['torn']}", flush=True)
    fin = common.wait_finished(paths, 900)
    # Each resume must start from the newest complete checkpoint at the time of its kill. The answer is
    # the first run_started after the resume was asked for: a resumed worker killed before it wrote one
    # saved nothing, so the next worker's run_started must name the same checkpoint.
    started = [e for e in read_all(paths.events) if e["type"] == "run_started"]
    for kill in kills:
        if "t_resume" not in kill:
            continue
        ev = next((e for e in started if e["t"] > kill["t_resume"]), None)
        kill["resumed_from"] = ev.get("resumed_from") if ev else None
        kill["ok"] = ev is not None and kill["resumed_from"] == kill["checkpoints_at_kill"]["newest_complete"]
    stream = common.check_stream(paths, LOG_INTERVAL)
    history, _ = load_history(paths.events, parallel=False)
    hist = {"step_events": history.step_events, "superseded_dropped": history.superseded,
            "current_step": history.current_step, "resumes": history.resumes,
            "ok": history.step_events == stream["kept_step_events"] and history.current_step == 600
            and history.superseded == stream["superseded_step_events"]}
    ok = fin["state"] == "completed" and stream["ok"] and hist["ok"] and all(k.get("ok") for k in kills)
    result = {"command": " ".join(["python", *sys.argv]), "machine": note, "ok": ok,
              "kills": len(kills), "kills_ok": sum(1 for k in kills if k.get("ok")),
              "final_state": fin["state"], "stream": stream, "history": hist, "trials": kills}
    out = common.write_result("kill9", result)
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=1, default=str), "->", out)
    tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
