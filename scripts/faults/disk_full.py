"""The disk fills up during a checkpoint save: a real run on a small tmpfs (``mount -t tmpfs -o size=48m``,
so this script must run as root), repeated with the free space at the save chosen at random.

    sudo python scripts/faults/disk_full.py [--trials 10] [--seed 4]

Per trial: a fresh 48 MiB tmpfs holds the runs folder; the tiny-cpu-demo preset (ZeRO-2, fp32: ~14 MB
per checkpoint) saves at step 10, then the script fills the disk with a file that leaves a random
0.2-13 MB free, so the save at step 20 runs out of space part-way (where depends on the room left).
Expected: an ``alert`` of kind ``disk`` naming the step, the free space and the intact checkpoint, a
``run_finished`` ``failed`` with the same reason, nothing torn left behind, ``latest`` and the step-10
checkpoint untouched (its files byte-identical to before). Then the filler is removed and
``zerotui resume`` must continue from step 10 and complete: the previous checkpoint really was intact.

``--nearly-full N`` more trials leave only 0-64 KiB, so the worker's own small writes (events, status)
compete for the last bytes too.

Writes ``benchmarks/results/faults-disk-full.json``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

from zerotui.core.events.stream import read_all  # noqa: E402

MIB = 1 << 20
OPTIONS = ["--max-steps", "60", "--log-interval", "1", "--save-interval", "10", "--keep-checkpoints", "1",
           "--eval-interval", "0", "--no-save-final"]


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(folder.iterdir())}


def fill(target: Path, leave: int) -> int:
    """Write a file that leaves ``leave`` bytes free on target's file system; returns its size."""
    free = os.statvfs(target).f_bavail * os.statvfs(target).f_frsize
    size = max(0, free - leave)
    with open(target / "filler.bin", "wb") as fh:
        chunk = b"\0" * MIB
        left = size
        while left > 0:
            n = fh.write(chunk[: min(MIB, left)])
            left -= n
    return size


def trial(i: int, rng: random.Random, leave: int, base: Path) -> dict:
    mnt = base / f"tmpfs-{i}"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], check=True)
    try:
        runs = mnt / "runs"
        paths = common.train(runs, *OPTIONS)
        common.wait_for(lambda: any(e["type"] == "checkpoint" for e in read_all(paths.events)), 300, "step 10's save")
        before = digest(paths.checkpoints / "step10")
        filler = fill(mnt, leave)
        free_at_save = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        fin = common.wait_finished(paths, 300)
        evs = read_all(paths.events)
        alerts = [e for e in evs if e["type"] == "alert" and e["kind"] == "disk"]
        ck = common.checkpoint_state(paths)
        out = {"trial": i, "leave_bytes": leave, "free_at_save_bytes": free_at_save, "filler_bytes": filler,
               "state": fin["state"], "reason": fin["reason"], "disk_alerts": len(alerts),
               "checkpoints_after": ck, "step10_unchanged": digest(paths.checkpoints / "step10") == before}
        (mnt / "filler.bin").unlink()
        t_resume = time.time()
        proc = common.resume(paths)
        resumed = {"rc": proc.returncode, "stderr": proc.stderr.strip()[-300:]}
        if proc.returncode == 0:
            fin2 = common.wait_finished(paths, 300)
            started = next(e for e in read_all(paths.events) if e["type"] == "run_started" and e["t"] > t_resume)
            resumed.update(state=fin2["state"], resumed_from=started.get("resumed_from"))
        out["resume"] = resumed
        out["ok"] = (fin["state"] == "failed" and "could not be written" in fin["reason"]
                     and "step10 is intact" in fin["reason"] and len(alerts) == 1
                     and ck["complete"] == ["step10"] and not ck["torn"] and ck["latest_file"] == "step10"
                     and out["step10_unchanged"] and resumed.get("resumed_from") == "step10"
                     and resumed.get("state") == "completed")
        if not out["ok"]:
            out["worker_log_tail"] = paths.log.read_text(errors="replace")[-1500:]
        return out
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--nearly-full", type=int, default=2)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("mounting a tmpfs needs root: run with sudo")
    rng = random.Random(args.seed)
    note = common.machine_note()
    trials = []
    with tempfile.TemporaryDirectory(prefix="zerotui-diskfull-") as tmp:
        leaves = [int(rng.uniform(0.2, 13) * MIB) for _ in range(args.trials)]
        leaves += [rng.randint(0, 64 << 10) for _ in range(args.nearly_full)]
        for i, leave in enumerate(leaves):
            t = trial(i, rng, leave, Path(tmp))
            trials.append(t)
            print(json.dumps({k: v for k, v in t.items() if k != "worker_log_tail"}), flush=True)
    ok = all(t["ok"] for t in trials)
    result = {"command": " ".join(["python", *sys.argv]), "machine": note, "ok": ok,
              "file_system": "tmpfs size=48m (mount -t tmpfs), one fresh mount per trial",
              "trials_total": len(trials), "trials_ok": sum(1 for t in trials if t["ok"]), "trials": trials}
    out = common.write_result("disk-full", result)
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=1), "->", out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
