"""``kill -9`` of a real worker while it saves a checkpoint, then ``zerotui resume``, repeated; the torn
checkpoint must never be used.

    python scripts/faults/kill_during_save.py [--kills 12] [--seed 2]

One run of the tiny-cpu-demo preset (ZeRO-2, CPU) with a checkpoint every 5 steps. For each kill the
script follows events.jsonl every millisecond; when the ``saving checkpoint`` phase event appears it
waits a random 0-1x the median duration of the last saves (measured from the ``checkpoint`` events'
``seconds``) and sends SIGKILL. What the kill hit is read from the folder right after: the tag folder
absent (before DeepSpeed wrote anything), present without ``zerotui_complete.json`` (torn), or complete.

Checked: the resumed worker's ``run_started.resumed_from`` is the newest *complete* checkpoint at the
time of the kill (never a torn one); torn folders are gone after the resume and the step is saved whole
again when the run reaches it; the run completes; the event stream passes ``common.check_stream``.

Writes ``benchmarks/results/faults-kill-during-save.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from zerotui.core.train.checkpoint import MARKER, list_checkpoints  # noqa: E402
from zerotui.core.events.stream import read_all  # noqa: E402
from zerotui.core.run.folder import run_state  # noqa: E402

OPTIONS = ["--max-steps", "400", "--log-interval", "1", "--save-interval", "5", "--keep-checkpoints", "3",
           "--eval-interval", "0"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=12)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    note = common.machine_note()
    tmp = tempfile.TemporaryDirectory(prefix="zerotui-killsave-")
    paths = common.train(Path(tmp.name), *OPTIONS)
    pid = common.worker_pid(paths)
    tail = common.Tail(paths)
    save_s = [0.05]
    trials = []
    for i in range(args.kills):
        # Follow the stream until a save begins (skipping the saves already announced).
        deadline = time.monotonic() + 240
        hit = None
        while time.monotonic() < deadline and hit is None:
            for ev in tail.poll():
                if ev["type"] == "checkpoint":
                    save_s.append(float(ev.get("seconds") or 0.0))
                elif ev["type"] == "phase" and ev["name"] == "saving checkpoint":
                    hit = ev
                elif ev["type"] == "run_finished":
                    raise SystemExit("the run finished before the planned kills; use more steps")
            time.sleep(0.001)
        if hit is None:
            raise SystemExit("no checkpoint save seen within 240 s")
        step = tail.last("step")["step"]
        tag = f"step{step}"
        delay = rng.uniform(0.0, statistics.median(save_s[-5:]))
        time.sleep(delay)
        common.kill9(pid)
        folder = paths.checkpoints / tag
        hit_what = ("complete" if (folder / MARKER).exists() else "torn" if folder.exists() else "before any file")
        files = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
        ck = common.checkpoint_state(paths)
        common.wait_for(lambda: run_state(paths) == "lost", 40, "the run to read as lost")
        t_resume = time.time()
        proc = common.resume(paths)
        if proc.returncode != 0:
            trials.append({"kill": i, "ok": False, "error": proc.stderr.strip()})
            break
        pid = int(json.loads(proc.stdout)["pid"])
        started = common.wait_for(
            lambda: next((e for e in read_all(paths.events) if e["type"] == "run_started" and e["t"] > t_resume),
                         None), 180, "the resumed worker's run_started")
        torn_after = [c.tag for c in list_checkpoints(paths.checkpoints) if not c.complete and c.step > started["start_step"]]
        trial = {"kill": i, "saving": tag, "delay_ms": round(delay * 1000, 1), "hit": hit_what,
                 "files_at_kill": files, "newest_complete_at_kill": ck["newest_complete"],
                 "latest_file_at_kill": ck["latest_file"], "resumed_from": started.get("resumed_from"),
                 "torn_left_after_resume": torn_after}
        trial["ok"] = trial["resumed_from"] == ck["newest_complete"] and not torn_after
        trials.append(trial)
        print(f"kill {i}: {trial}", flush=True)
        # Start the next trial's follow from here (the resumed worker's events).
        tail.poll()
    fin = common.wait_finished(paths, 900)
    final = [c for c in list_checkpoints(paths.checkpoints)]
    stream = common.check_stream(paths, 1)
    hits = {}
    for t in trials:
        hits[t.get("hit", "error")] = hits.get(t.get("hit", "error"), 0) + 1
    ok = (fin["state"] == "completed" and stream["ok"] and all(t["ok"] for t in trials)
          and all(c.complete for c in final))
    result = {"command": " ".join(["python", *sys.argv]), "machine": note, "ok": ok, "kills": len(trials),
              "kills_ok": sum(1 for t in trials if t["ok"]), "what_the_kill_hit": hits,
              "save_seconds_median": statistics.median(save_s), "final_state": fin["state"],
              "final_checkpoints": [(c.tag, c.complete) for c in final], "stream": stream, "trials": trials}
    out = common.write_result("kill-during-save", result)
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=1, default=str), "->", out)
    tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
