"""The jobs users bring, run through the product on one GPU under a memory cap.

    python -m benchmarks.seed_scenarios.run --out results.json --cap 24GiB \
        --scenario 7b-lora-fit --scenario 7b-lora-seed --scenario 7b-qlora-fit --scenario 7b-qlora-seed
    python -m benchmarks.seed_scenarios.run --dry-run          # the tiny shape on the CPU, to test the harness

Each scenario is a plan (as the seed guide writes it, or as ``zerotui fit`` picks it for the capped card)
trained by ``zerotui train PLAN --foreground`` (the real supervisor, worker and DeepSpeed engine) on a
random-weight model folder of the named shape, built once per shape (weights do not change memory or
speed). Reported per scenario: the estimate against the measured peak (the worker's
``torch.cuda.max_memory_reserved`` plus the CUDA context the estimator assumes, and NVML's used memory),
tokens/s and model-FLOPs utilisation (docs/seed_scenarios.md has the FLOP count), the fp16 loss scale as
it moved, and start-up to the first step.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from benchmarks.seed_scenarios.data import WORDS, row_lengths, write_data
from benchmarks.seed_scenarios.models import build_model_apart
from benchmarks.seed_scenarios.scenarios import SCENARIOS, plan_for

#: Dense bf16 matmul peak of an H200 SXM (NVIDIA's data sheet: 989 TFLOP/s without sparsity), and the
#: rate its cuBLAS reaches on large GEMMs here (~790 TFLOP/s, the device notes), both reported.
PEAK_SPEC = 989e12
PEAK_MEASURED = 790e12


class FolderPeak:
    """The most bytes a folder held, sampled every ``every`` seconds on a thread while in the ``with``
    block: NVMe offload's swap files (the worker's own telemetry walks them every 30 s)."""

    def __init__(self, path: Optional[Path], every: float = 0.5) -> None:
        import threading

        self.path, self.every, self.peak = path, every, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        from zerotui.core.hardware.disks import allocated_bytes

        while not self._stop.is_set():
            if self.path is not None and self.path.is_dir():
                self.peak = max(self.peak or 0, allocated_bytes(self.path))
            self._stop.wait(self.every)

    def __enter__(self) -> "FolderPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def run_plan(plan: Any, runs: Path, timeout: float) -> tuple[Path, float, int, str, Any]:
    """Train ``plan`` through zerotui; the run folder, start time, exit code, output tail, and NVML's
    peak as this process sampled it (nvml_peak.py; None without NVML)."""
    from benchmarks.seed_scenarios.nvml_peak import NvmlPeak

    plan_file = runs.parent / f"{plan.name}.yaml"
    plan_file.write_text(plan.to_yaml())
    env = dict(os.environ, ZEROTUI_TELEMETRY_S="2", PYTHONUNBUFFERED="1")
    t0 = time.time()
    with NvmlPeak() as watch:
        try:
            r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", str(plan_file), "--foreground",
                                "--force", "--runs-dir", str(runs)], capture_output=True, text=True, env=env,
                               timeout=timeout)
            rc, tail = r.returncode, (r.stdout + r.stderr)[-1500:]
        except subprocess.TimeoutExpired as err:
            rc, tail = 124, str(err)[-500:]
        finally:
            kill_workers(runs)
    folder = max((p for p in runs.iterdir() if p.is_dir() and p.name.endswith(plan.name)), key=lambda p: p.stat().st_mtime)
    return folder, t0, rc, tail, watch.peak


#: nvmlDeviceGetMemoryInfo reads 0.60 GiB used on the idle H200 (nvidia-smi shows 0 MiB; the seed
#: results' gpu_used_at_start, 2026-12-04); more than this at a run's start is another process, whose
#: memory NVML's peak would count as the run's.
OTHERS_ON_GPU = 2**30


def kill_workers(runs: Path, grace_s: float = 10.0) -> list[int]:
    """End every process under ``runs`` that is still alive, after ``grace_s`` seconds for a finishing
    run to exit by itself; the pids killed. zerotui's worker runs in a session of its own so that a run
    outlives its terminal, so neither a timeout here nor ``timeout`` ending this harness ends it. One left
    alone went on training into the next device command (2026-12-04: 3b-full-ho58, 94,001 MiB still in
    use when its re-run started). A pid counts only while its command line names the run's folder (a
    reused pid is someone else's), and its whole session goes: before the worker's first heartbeat the
    status names only the process that launched it. Waits for the GPU to show the memory freed."""
    from zerotui.core.hardware.gpu_release import wait_gpu_release
    from zerotui.core.run.folder import RunPaths, pid_alive, read_status
    from zerotui.core.run.spare import cmdline

    mine = []
    for folder in (p for p in runs.iterdir() if p.is_dir()):
        st = read_status(RunPaths(folder))
        names = {str(folder), str(folder.resolve())}
        mine += [pid for pid in {int(p) for p in (st.get("pids") or [st.get("pid")]) if p}
                 if pid_alive(pid) and any(n in cmdline(pid) for n in names)]
    deadline = time.monotonic() + grace_s
    while any(pid_alive(p) for p in mine) and time.monotonic() < deadline:
        time.sleep(0.2)
    killed = []
    for pid in (p for p in mine if pid_alive(p)):
        try:
            group = os.getpgid(pid)
            if group == os.getpgid(0):  # never this harness's own group
                os.kill(pid, signal.SIGKILL)
            else:
                os.killpg(group, signal.SIGKILL)
            killed.append(pid)
        except OSError:
            pass  # gone meanwhile
    if killed:
        wait_gpu_release(killed)
    return killed


def gpu_used_bytes() -> Optional[int]:
    """NVML's used memory on GPU 0 now (None without NVML): what other processes hold before a run."""
    from zerotui.core.hardware.nvml import NvmlSession

    nv = NvmlSession()
    try:
        handle, _ = nv.call("nvmlDeviceGetHandleByIndex", 0) if nv.ok else (None, "")
        mem, _ = nv.call("nvmlDeviceGetMemoryInfo", handle) if handle is not None else (None, "")
        return int(mem.used) if mem is not None else None
    finally:
        nv.close()


def measure(folder: Path, t0: float, skip_windows: int = 1, *, fine: Optional[int] = None) -> dict[str, Any]:
    """The run's figures from its events. ``fine``: NVML's peak as this process sampled it every 0.1 s
    (run_plan, nvml_peak.py); the larger of it and the run's own 2 s telemetry counts, and the telemetry's
    is kept beside it."""
    from zerotui.core.events.stream import read_all

    evs = read_all(folder / "events.jsonl")
    steps = [e for e in evs if e["type"] == "step"]
    tele = [e for e in evs if e["type"] == "telemetry"]
    fin = next((e for e in evs if e["type"] == "run_finished"), {})
    alerts = [e for e in evs if e["type"] == "alert"]
    kept = steps[skip_windows:] or steps
    med = lambda k: statistics.median(e[k] for e in kept) if kept and all(isinstance(e.get(k), (int, float)) for e in kept) else None  # noqa: E731
    nvml = max((g.get("mem_used") or 0 for e in tele for g in e.get("gpus") or []), default=None)
    last = steps[-1] if steps else {}
    started = next((e for e in evs if e["type"] == "run_started"), {})
    # the engine's own line when it made Adam's state at start (core/train/optimizer_state.py); None
    # where it made none (CPU Adam, a resume) or ran before it existed
    made = next((e["message"] for e in evs if e["type"] == "log"
                 and str(e.get("message", "")).startswith("optimizer state made before the first step")), None)
    # host memory from the same telemetry: the run's processes (rss) before and from the end's checkpoint
    # save on, and the machine's used RAM (what the OOM killer weighs)
    saving = next((e["t"] for e in reversed(evs) if e["type"] == "phase" and e.get("name") == "saving checkpoint"),
                  None)
    top = lambda key, es: max((e[key] for e in es if isinstance(e.get(key), int)), default=None)  # noqa: E731
    building = op_build_times(evs)
    run_tele = [e for e in tele if not building(e["t"])]
    return {
        "state": fin.get("state"), "reason": fin.get("reason"), "steps": len(steps),
        "tokens_per_s": med("tokens_per_s"), "tflops_per_gpu": med("tflops"), "step_time_s": med("step_time"),
        "loss_first": steps[0]["loss"] if steps else None, "loss_last": last.get("loss"),
        "loss_scale": [e.get("loss_scale") for e in steps], "loss_scale_dynamic": last.get("loss_scale_dynamic"),
        "skipped_total": last.get("skipped_total"),
        "alerts": [{"kind": a.get("kind"), "message": a.get("message")} for a in alerts],
        "peak_allocated": last.get("gpu_mem_allocated_peak"), "peak_reserved": last.get("gpu_mem_reserved_peak"),
        # the allocator's release-and-retry count at each logged step (core/train/loop.py _memory_peaks)
        "alloc_retries": [e.get("gpu_alloc_retries") for e in steps],
        "nvml_used_max": nvml if fine is None else max(fine, nvml or 0), "nvml_used_max_telemetry": nvml,
        "estimate": started.get("estimate"),
        "first_step_s": round(steps[0]["t"] - t0, 1) if steps else None,
        "params_total": started.get("params_total"), "params_trainable": started.get("params_trainable"),
        "optimizer_state_made": made,
        "host_rss_max": top("rss", tele), "host_ram_used_max": top("ram_used", tele),
        "host_ram_total": top("ram_total", tele),
        "host_rss_max_training": top("rss", [e for e in run_tele if saving is None or e["t"] < saving]),
        "host_rss_max_saving": top("rss", [e for e in run_tele if saving is not None and e["t"] >= saving]),
        "host_rss_max_building": top("rss", [e for e in tele if building(e["t"])]),
        # the same without resident file pages (the model's mapped safetensors, libraries, /dev/shm files):
        # what the run itself holds. Telemetry's rss_file was Linux's "shared" on 2026-12-07 (pinned CUDA
        # buffers in it: the "anon" figures of that day's runs), the pages of mapped regular files since
        # (core/hardware/file_pages.py: the "own" figures)
        "host_rss_own_max_training": top("anon", [own(e) for e in run_tele if saving is None or e["t"] < saving]),
        "host_rss_own_max_saving": top("anon", [own(e) for e in run_tele if saving is not None and e["t"] >= saving]),
    }


def own(e: dict) -> dict:
    """A telemetry event's RSS less its file pages, as {"anon": bytes}; empty without both figures."""
    rss, file_pages = e.get("rss"), e.get("rss_file")
    return {"anon": rss - file_pages} if isinstance(rss, int) and isinstance(file_pages, int) else {}


#: Telemetry's process tree finds new children only every 10 s (core/hardware/telemetry.py), and a
#: compiler it found may be sampled once more after the build's phase ended.
BUILD_TAIL_S = 12.0


def op_build_times(evs: list[dict]) -> Any:
    """Whether a moment of the run falls in a first-use build of a DeepSpeed op (the worker's phase
    "building DeepSpeed's ... op", to the next phase and BUILD_TAIL_S past it). Telemetry sums the RSS of
    the worker's process tree, and there the compilers count: 4.9 GiB on this 2-core machine for
    cpu_adam and async_io (benchmarks/jit_build_rss.py), none of it the training's."""
    phases = [e for e in evs if e["type"] == "phase"]
    spans = []
    for i, e in enumerate(phases):
        if str(e.get("name", "")).startswith("building DeepSpeed's"):
            end = next((f["t"] for f in phases[i + 1:] if f.get("name") != e.get("name")), float("inf"))
            spans.append((e["t"], end + BUILD_TAIL_S))
    return lambda t: any(a <= t <= b for a, b in spans)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", action="append", default=[])
    ap.add_argument("--cap", default="24GiB")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--log-interval", type=int, default=5)
    ap.add_argument("--models-dir", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    from zerotui.core.hardware.disks import allocated_bytes
    from zerotui.core.plan.allocator import effective_conf
    from zerotui.core.sizes import parse_size

    if a.dry_run:
        a.scenario, a.cap, a.steps, a.log_interval = a.scenario or ["tiny-lora-seed", "tiny-qlora-fit"], "0", 6, 2
    # `timeout` ends this harness with SIGTERM: exit through the finally blocks, which kill the workers
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cap = parse_size(a.cap) if a.cap not in ("0", "none") else 0
    work = Path(tempfile.mkdtemp(prefix="zt-seed-"))
    # the run folders (checkpoints of up to 16 bytes a weight) go when the harness ends, however it ends:
    # left behind they filled the GPU machine's /tmp for the next command (2026-12-04, 3b-full-ho58)
    try:
        models = a.models_dir or work / "models"
        models.mkdir(parents=True, exist_ok=True)
        # 1,000 rows: more than any scenario draws (24 steps x 2 x 8 at most); the harness tokenises them once
        # for data_longest_tokens, which the GPU machine pays for
        rows, words = (400, 200) if a.dry_run else (1000, WORDS)
        data = write_data(work / "data.jsonl", rows=rows, words=words)
        out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "host": platform.node(), "cap_bytes": cap, "nvml_clean": True,
                               "command": " ".join(sys.argv), "versions": _versions(), "builds": {}, "scenarios": {},
                               # the command's own setting; each row has the one its run had
                               "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
                               # zerotui's worker makes Adam's state at start (core/train/optimizer_state.py);
                               # files without this key were measured when torch made it at the first step
                               "optimizer_states_made": "before the first step",
                               # the widest micro-batch a plan can have is min(seq_len, this rounded up to 8)
                               "data_longest_tokens": max(row_lengths(data)),
                               # how the rows were made (ran_masked rebuilds the micro-batches from them)
                               "data_words": words, "data_rows": rows,
                               # collate leaves the Llama family's padding unmasked (core/data/tokenise.py)
                               "padding_masked": False}
        card = _card_bytes()
        if card:
            out["card_bytes"] = card
        if cap and card and cap > card:
            # The device tool may answer a call for an H200 with an H100 (2026-12-07: fit80's plan meant to
            # run uncapped measured the H100's limit instead): say so where the result is read.
            print(f"warning: the cap {a.cap} is above this card's {card / 2**30:.1f} GiB: the card, not the "
                  "cap, bounds the runs", flush=True)
        for name in a.scenario:
            shape = SCENARIOS[name][0]
            folder = models / f"llama-{shape}"
            if shape not in out["builds"]:
                out["builds"][shape] = build_model_apart(shape, folder)
                print(f"model {shape}: {out['builds'][shape]}", flush=True)
            plan = plan_for(name, folder, data, cap, a.steps, a.log_interval)
            runs = work / "runs"
            runs.mkdir(exist_ok=True)
            used_before = gpu_used_bytes()
            import psutil  # what the machine had free for the run's host memory (model folders in /dev/shm count)

            ram_free = int(psutil.virtual_memory().available)
            with FolderPeak(Path(plan.nvme_path) if plan.uses_nvme() else None) as swap:
                run, t0, rc, tail, fine = run_plan(plan, runs, a.timeout)
            # the allocator the run had: the command's setting, else zerotui's choice for the plan
            row = {"plan": plan.to_dict(), "rc": rc, "alloc_conf": effective_conf(os.environ),
                   **measure(run, t0, fine=fine), "gpu_used_at_start": used_before,
                   "ram_available_at_start": ram_free}
            if plan.uses_nvme():  # the swap files' peak, and whether the run's supervisor took them away
                row["nvme_bytes_max"] = swap.peak
                row["nvme_left_after"] = allocated_bytes(Path(plan.nvme_path))
            if used_before is not None and used_before > OTHERS_ON_GPU:
                row["nvml_clean"] = False  # another process held GPU memory: NVML's peak is not the run's
            if rc != 0:
                row["tail"] = tail
            # the run's end-of-run checkpoint (full fine-tunes: 16 bytes a weight) is not measured; left
            # in place it filled the 64 GB disk after one 3B run (seed-scenarios-step-b-2026-12-04.json)
            shutil.rmtree(run / "checkpoints", ignore_errors=True)
            _derive(row, shape, cap)
            out["scenarios"][name] = row
            print(json.dumps({k: row.get(k) for k in ("state", "tokens_per_s", "mfu_spec", "peak_reserved",
                                                      "estimate_gpu_bytes", "measured_gpu_bytes", "error_pct",
                                                      "first_step_s")}), flush=True)
            a.out.write_text(json.dumps(out, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _derive(row: dict[str, Any], shape: str, cap: int) -> None:
    """MFU by the FLOP count in docs/seed_scenarios.md, and the estimate against the measured peak."""
    from zerotui.core.estimate.cuda_context import context_bytes
    from zerotui.core.plan.schema import plan_from_dict

    est = row.get("estimate") or {}
    row["estimate_gpu_bytes"] = est.get("gpu_bytes")
    if row.get("peak_reserved"):
        # NVML's peak where the run had the GPU alone, else the peak reserved plus the context assumed
        context = context_bytes(plan_from_dict(row["plan"]))
        nvml = row.get("nvml_used_max") if row.get("nvml_clean", True) else None
        row["measured_gpu_bytes"] = nvml or row["peak_reserved"] + context
        if est.get("gpu_bytes"):
            row["error_pct"] = round(100 * (est["gpu_bytes"] - row["measured_gpu_bytes"]) / row["measured_gpu_bytes"], 1)
    if row.get("tflops_per_gpu"):
        row["mfu_spec"] = round(row["tflops_per_gpu"] * 1e12 / PEAK_SPEC, 3)
        row["mfu_measured_peak"] = round(row["tflops_per_gpu"] * 1e12 / PEAK_MEASURED, 3)
    # only a run that measured a peak can be said to have stayed under the cap (an OOM has no peak)
    row["fits_under_cap"] = bool(cap) and bool(row.get("measured_gpu_bytes")) and row["measured_gpu_bytes"] <= cap


def _card_bytes() -> int:
    try:
        import torch

        return int(torch.cuda.get_device_properties(0).total_memory) if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - a harness on a machine without CUDA records no card
        return 0


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for name in ("torch", "deepspeed", "transformers", "peft", "bitsandbytes"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "-"
    try:
        import torch

        out["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    except Exception:  # noqa: BLE001
        out["gpu"] = "?"
    return out


if __name__ == "__main__":
    sys.exit(main())
