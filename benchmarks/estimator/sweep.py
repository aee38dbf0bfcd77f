"""Run a sweep of configurations on this machine's GPU (or CPU with --device cpu for a dry run).

    python3 -m benchmarks.estimator.sweep --sweep sweep1 --out $OUT --deadline 480

Resilience, because device minutes are scarce:
- configurations run in worker processes (worker.py), several per process to save start-up time, but
  every CPU-offload row in a fresh process (its host RSS must not include earlier rows' leftovers);
  with --fresh every row is measured in a process of its own, forked from a worker that has done the
  imports (a reused process's cached GPU segments and heap would be counted in the next row's peaks);
- --alloc-conf sets PYTORCH_CUDA_ALLOC_CONF for the measuring processes and is recorded in every row;
- an OOM or crash ends that worker after its row is written; the rest continue in a new process;
- a configuration that runs past --config-timeout is killed and recorded as 'timeout';
- nothing new starts after --deadline seconds, so the command ends inside its limit;
- every row is appended to OUT/estimator-raw.jsonl the moment it exists.
DeepSpeed's FusedAdam (stage 0) and DeepSpeedCPUAdam (offload) are JIT-built in background processes
at the start, while GPU-only rows are measured; rows needing them wait until their build is done.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.estimator.matrix import SWEEPS, Config, needs_op  # noqa: E402
from benchmarks.estimator.paths import ensure_zerotui_importable  # noqa: E402

ensure_zerotui_importable()

from zerotui.core.train.distributed import free_port  # noqa: E402

BUILD_CODE = {
    "cpu_adam": "from deepspeed.ops.op_builder import CPUAdamBuilder; CPUAdamBuilder().load()",
    "fused_adam": "from deepspeed.ops.op_builder import FusedAdamBuilder; FusedAdamBuilder().load()",
}


def _log(out: Path, text: str) -> None:
    line = f"[{time.strftime('%H:%M:%S')}] {text}"
    print(line, flush=True)
    with (out / "sweep.log").open("a") as f:
        f.write(line + "\n")


def _append(path: Path, rec: dict) -> None:
    with path.open("a") as f:
        f.write(json.dumps(rec, default=str) + "\n")


def _env_info(device: str) -> dict:
    info = {"python": sys.version.split()[0], "platform": platform.platform(), "device": device,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,memory.used,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception:
        pass
    try:
        with open("/proc/meminfo") as f:
            info["meminfo_total_kb"] = int(f.readline().split()[1])
        info["cpu_count"] = os.cpu_count()
    except Exception:
        pass
    return info


class Builds:
    """Background JIT builds of DeepSpeed ops; a row that needs one waits for it."""

    def __init__(self, needed: set[str], out: Path, device: str) -> None:
        self.procs: dict[str, subprocess.Popen] = {}
        self.state: dict[str, str] = {}
        self.t0 = time.time()
        self.times: dict[str, float] = {}
        for op in sorted(needed):
            if device == "cpu" and op == "fused_adam":
                self.state[op] = "ok"  # the dry run uses PyTorch's AdamW for stage 0
                continue
            log = (out / f"build-{op}.log").open("w")
            self.procs[op] = subprocess.Popen([sys.executable, "-c", BUILD_CODE[op]], stdout=log,
                                              stderr=subprocess.STDOUT, env=os.environ.copy())
            self.state[op] = "building"

    def poll(self) -> None:
        for op, p in self.procs.items():
            if self.state[op] == "building" and p.poll() is not None:
                self.state[op] = "ok" if p.returncode == 0 else "failed"
                self.times[op] = time.time() - self.t0

    def ready(self, op: str) -> bool:
        self.poll()
        return op == "" or self.state.get(op) == "ok"

    def failed(self, op: str) -> bool:
        self.poll()
        return self.state.get(op) == "failed"

    def pending(self) -> bool:
        self.poll()
        return any(s == "building" for s in self.state.values())


def _kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def _cfg_json(cfg: Config) -> dict:
    return {"id": cfg.id, "shape": cfg.shape, "plan": cfg.plan_fields(), "group": cfg.group}


def run_batch(batch: list[Config], args, out: Path, raw: Path, t_end: float) -> list[Config]:
    """Run ``batch`` in one worker; returns the configurations it did not get to."""
    job_dir = Path(tempfile.gettempdir()) / "estimator-jobs"  # not under OUT: only 8 files come back
    job_dir.mkdir(exist_ok=True)
    results = job_dir / "results.jsonl"
    current = job_dir / "current.json"
    results.write_text("")
    current.write_text(json.dumps({"id": None}))
    job = {"device": args.device, "results": str(results), "current": str(current), "port": free_port(),
           "configs": [_cfg_json(c) for c in batch], "fork_each": args.fresh, "alloc_conf": args.alloc_conf}
    (job_dir / "job.json").write_text(json.dumps(job))
    log = (out / "workers.log").open("a")
    log.write(f"\n==== worker for {[c.id for c in batch]}\n")
    log.flush()
    env = dict(os.environ)
    if args.alloc_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = args.alloc_conf
    p = subprocess.Popen([sys.executable, str(HERE / "worker.py"), str(job_dir / "job.json")], stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True, cwd=str(REPO), env=env)
    done: set[str] = set()
    killed_for = None
    while True:
        time.sleep(0.5)
        for line in results.read_text().splitlines():
            rec = json.loads(line)
            if rec["id"] not in done:
                done.add(rec["id"])
                _append(raw, rec)
                _log(out, f"{rec['id']}: {rec['status']}" + (
                    f" peak {rec.get('peak_allocated', 0) / 2**30:.2f} GiB, step {rec.get('step_time', 0):.3f} s"
                    if rec["status"] == "ok" else f" ({rec.get('error', '')[:160]})"))
        if p.poll() is not None:
            break
        cur = json.loads(current.read_text() or "{}")
        now = time.time()
        if cur.get("id") and cur["id"] not in done:
            if now - cur["start"] > args.config_timeout or now > t_end + args.config_timeout:
                killed_for = cur["id"]
                _kill(p)
                break
    for line in results.read_text().splitlines():  # rows written just before the exit
        rec = json.loads(line)
        if rec["id"] not in done:
            done.add(rec["id"])
            _append(raw, rec)
            _log(out, f"{rec['id']}: {rec['status']}")
    cur = json.loads(current.read_text() or "{}")
    lost = killed_for or (cur.get("id") if cur.get("id") not in done else None)
    if lost:
        cfg = next(c for c in batch if c.id == lost)
        status = "timeout" if killed_for else "crash"
        _append(raw, {**_cfg_json(cfg), "status": status, "error": f"worker exit {p.returncode}"})
        _log(out, f"{lost}: {status} (worker exit {p.returncode})")
        done.add(lost)
    return [c for c in batch if c.id not in done]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", default="sweep1", choices=sorted(SWEEPS))
    ap.add_argument("--only", default="", help="comma-separated configuration ids")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/estimator-out")))
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds after which nothing new starts")
    ap.add_argument("--config-timeout", type=float, default=120.0)
    ap.add_argument("--per-process", type=int, default=8, help="GPU-only rows per worker process")
    ap.add_argument("--fresh", action="store_true", help="every row in a process of its own (forked)")
    ap.add_argument("--alloc-conf", default="", help="PYTORCH_CUDA_ALLOC_CONF for the measuring processes")
    args = ap.parse_args()
    t_start = time.time()
    t_end = t_start + args.deadline
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "estimator-raw.jsonl"
    queue = list(SWEEPS[args.sweep])
    if args.only:
        keep = set(args.only.split(","))
        queue = [c for c in queue if c.id in keep]
    (out / "estimator-env.json").write_text(json.dumps(
        {**_env_info(args.device), "sweep": args.sweep, "argv": sys.argv,
         "configs": [asdict(c) for c in queue]}, indent=1, default=str))
    builds = Builds({needs_op(c) for c in queue} - {""}, out, args.device)
    _log(out, f"{len(queue)} configurations; builds: {builds.state}")
    while queue and time.time() < t_end:
        ready = [c for c in queue if builds.ready(needs_op(c))]
        for c in [c for c in queue if builds.failed(needs_op(c))]:
            _append(raw, {**_cfg_json(c), "status": "error", "error": f"{needs_op(c)} build failed"})
            queue.remove(c)
        if not ready:
            if builds.pending():
                time.sleep(1.0)
                continue
            break
        first = ready[0]
        if args.fresh:
            batch = ready[: args.per_process]  # each forked on its own: nothing carries over
        elif needs_op(first) == "cpu_adam":
            batch = [first]
        else:
            # ZeRO-3 leaves memory behind and patches torch.nn.functional.linear for the rest of the
            # process (deepspeed/runtime/zero/partition_parameters.py): a stage-3 row ends its worker.
            batch = []
            for c in [c for c in ready if needs_op(c) != "cpu_adam"][: args.per_process]:
                batch.append(c)
                if c.plan.get("stage") == 3:
                    break
        left = run_batch(batch, args, out, raw, t_end)
        queue = left + [c for c in queue if c not in batch]
        statuses = [json.loads(x)["status"] for x in raw.read_text().splitlines() if x.strip()]
        if len(statuses) >= 3 and all(st == "crash" for st in statuses[-3:]):
            _log(out, "three rows in a row crashed: the rest are not run (workers.log says why)")
            break
    for c in queue:
        _append(raw, {**_cfg_json(c), "status": "not_run", "error": "deadline"})
    builds.poll()
    for p in builds.procs.values():
        if p.poll() is None:
            _kill_plain(p)
    _log(out, f"done in {time.time() - t_start:.0f} s; build times {builds.times}")
    _summary(raw)
    return 0


def _kill_plain(p: subprocess.Popen) -> None:
    p.kill()
    p.wait()


def _summary(raw: Path) -> None:
    rows = [json.loads(x) for x in raw.read_text().splitlines() if x.strip()]
    print(f"{'id':38} {'status':8} {'peakGiB':>8} {'resGiB':>8} {'smiGiB':>8} {'rssGiB':>7} {'step_s':>7} {'tok/s':>8}")
    for r in rows:
        g = lambda k: (r.get(k) or 0) / 2**30  # noqa: E731
        print(f"{r['id'][:38]:38} {r['status'][:8]:8} {g('peak_allocated'):8.2f} {g('peak_reserved'):8.2f} "
              f"{g('nvml_used_peak'):8.2f} {g('rss_peak'):7.2f} {r.get('step_time') or 0:7.3f} "
              f"{r.get('tokens_per_s') or 0:8.0f}")


if __name__ == "__main__":
    sys.exit(main())
