"""The dataset file is deleted while a real run uses it, at a random moment (start-up or training).

    python scripts/faults/dataset_deleted.py [--trials 10] [--seed 5]

Decided behaviour (docs/reliability.md): a worker reads and tokenises the data file once, at start-up,
and trains from the tokenised copy in memory. So

* deleted before the worker read it: the run fails at once, with a ``run_finished`` reason that names the
  file ("... does not exist") and no traceback;
* deleted after: the run goes on and completes on the data it read;
* resuming a run whose data file is gone is refused before anything starts (``zerotui resume`` exits 2,
  one line naming the file): a resume that silently trained on other data, or on nothing, would be worse
  than a clear refusal. With the file put back (same content), the resume continues.

Per trial: a fresh copy of the shipped sample data (so the first read also tokenises it: no cache),
``zerotui train`` on it, deletion after a random 0-14 s; every other trial then also stops the run,
tries ``zerotui resume`` with the file gone, puts the file back and resumes for real.

Writes ``benchmarks/results/faults-dataset-deleted.json``.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from zerotui.core.events.stream import read_all  # noqa: E402
from zerotui.core.run.folder import read_status  # noqa: E402

SAMPLE = common.ROOT / "core" / "assets" / "sample.jsonl"
OPTIONS = ["--max-steps", "150", "--log-interval", "5", "--save-interval", "20", "--keep-checkpoints", "1",
           "--eval-interval", "0", "--no-save-final"]


def phase_at(evs: list[dict]) -> str:
    last = next((e for e in reversed(evs) if e["type"] in ("phase", "step", "run_started")), None)
    if last is None:
        return "before the first event"
    return f"phase {last['name']}" if last["type"] == "phase" else "training"


def trial(i: int, rng: random.Random, base: Path, try_resume: bool) -> dict:
    folder = base / f"t{i}"
    folder.mkdir()
    data = folder / "my data.jsonl"  # a space in the path, as users' paths have
    shutil.copy(SAMPLE, data)
    paths = common.train(folder / "runs", "--data", str(data), *OPTIONS)
    delay = rng.uniform(0.0, 14.0)
    time.sleep(delay)
    at = phase_at(read_all(paths.events))
    data.unlink()
    out: dict = {"trial": i, "deleted_after_s": round(delay, 2), "deleted_during": at}
    if try_resume:
        # Let it train a little after the deletion, then stop it gracefully (if it is still running).
        time.sleep(2.0)
        common.zerotui(folder / "runs", "stop", paths.name, "--runs-dir", str(folder / "runs"))
    fin = common.wait_finished(paths, 600)
    out.update(state=fin["state"], reason=fin["reason"], step=fin.get("step"))
    read_data = any(e["type"] == "log" and e["message"].startswith("data ") for e in read_all(paths.events))
    out["data_was_read"] = read_data
    if read_data:
        ok = fin["state"] in ("completed", "stopped")
    else:
        gone = ("no such file" in fin["reason"].lower() or "does not exist" in fin["reason"])
        ok = fin["state"] == "failed" and gone and str(data) in fin["reason"] and "Traceback" not in fin["reason"]
    if try_resume and fin["state"] != "completed":
        status_before = read_status(paths).get("state")
        refused = common.resume(paths)
        out["resume_without_file"] = {"rc": refused.returncode, "stderr": refused.stderr.strip(),
                                      "state_unchanged": read_status(paths).get("state") == status_before}
        shutil.copy(SAMPLE, data)
        t_resume = time.time()
        again = common.resume(paths)
        fin2 = common.wait_finished(paths, 600) if again.returncode == 0 else {"state": f"rc {again.returncode}"}
        started = next((e for e in read_all(paths.events) if e["type"] == "run_started" and e["t"] > t_resume), {})
        out["resume_with_file_back"] = {"rc": again.returncode, "state": fin2["state"],
                                        "resumed_from": started.get("resumed_from")}
        r = out["resume_without_file"]
        ok = ok and r["rc"] == 2 and len(r["stderr"].splitlines()) == 1 and str(data) in r["stderr"] \
            and "put the file back" in r["stderr"] \
            and "Traceback" not in r["stderr"] and r["state_unchanged"] and fin2["state"] == "completed"
    out["ok"] = ok
    if not ok:
        out["worker_log_tail"] = paths.log.read_text(errors="replace")[-1500:]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    note = common.machine_note()
    trials = []
    with tempfile.TemporaryDirectory(prefix="zerotui-datadel-") as tmp:
        for i in range(args.trials):
            t = trial(i, rng, Path(tmp), try_resume=i % 2 == 1)
            trials.append(t)
            print(json.dumps({k: v for k, v in t.items() if k != "worker_log_tail"}), flush=True)
    ok = all(t["ok"] for t in trials)
    outcomes: dict[str, int] = {}
    for t in trials:
        key = "went on (data already read)" if t["data_was_read"] else "failed clearly (deleted before it was read)"
        outcomes[key] = outcomes.get(key, 0) + 1
    result = {"command": " ".join(["python", *sys.argv]), "machine": note, "ok": ok, "trials_total": len(trials),
              "trials_ok": sum(1 for t in trials if t["ok"]), "outcomes": outcomes,
              "resume_refusals_tried": sum(1 for t in trials if "resume_without_file" in t), "trials": trials}
    out = common.write_result("dataset-deleted", result)
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=1), "->", out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
