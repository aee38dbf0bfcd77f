"""Several processes through DeepSpeed's own launcher on the CPU (gloo): what CI can check of several
GPUs. Real detached runs with two CPU ranks: training, a graceful stop of every process, a killed rank,
an exception on one rank, a hung rank ended by the collective timeout.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from zerotui.core.events.stream import validate
from zerotui.core.plan.schema import Plan
from zerotui.core.run.rank_records import (read_records)
from zerotui.core.run.folder import RunPaths, pid_alive, read_status
from multiprocess_shared import start, run_pids  # noqa: F401
from run_events import events, wait_until



@pytest.fixture(scope="module")
def cache():
    """One tokenised-data cache for the module's runs (rank 0 tokenises once, the rest read it)."""
    with tempfile.TemporaryDirectory(prefix="zerotui-mp-cache-") as d:
        yield d


@pytest.fixture
def cpu_ranks(cache, monkeypatch):
    """Two CPU ranks need a machine without GPUs (``gpus: 2`` would mean two GPUs elsewhere)."""
    from zerotui.core.hardware.detect import detect

    hw = detect(probe_disks=False)
    if 0 < hw.gpu_count < 2:
        pytest.skip("one GPU: two ranks cannot run here")
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", cache)
    monkeypatch.setenv("ZEROTUI_TELEMETRY_S", "1")
    # The caller's environment asks for NVLink multicast: every rank must still get it off.
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    monkeypatch.setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "0")
    return hw


def mp_plan(tmp_path: Path, **fields) -> Plan:
    # fp32: on 2 CPU cores the tiny model trains faster than in bf16 (presets/tiny-cpu-demo.yaml).
    base = dict(name="mp", model="tiny", data="sample", precision="fp32", stage=2, gpus=2, micro_batch=8,
                seq_len=128, lr=1e-3, warmup_steps=3, max_steps=24, log_interval=4, save_interval=0,
                save_minutes=0, eval_interval=0, save_final=False, runs_dir=str(tmp_path / "runs"))
    base.update(fields)
    return Plan(**base)


def ended(paths: RunPaths, timeout: float = 600) -> dict:
    """The run's one run_finished, once it and every process of the run are gone; checks the stream."""
    wait_until(lambda: bool(events(paths, "run_finished")), timeout, "run_finished", paths)
    pids = run_pids(paths)
    wait_until(lambda: not any(pid_alive(p) for p in pids), 30, f"every process of the run to exit {pids}", paths)
    stream = events(paths)
    assert [p for e in stream for p in validate(e)] == []
    finished = [e for e in stream if e["type"] == "run_finished"]
    assert len(finished) == 1 and stream[-1] is finished[0], "exactly one run_finished, the last event"
    return finished[0]


def rank_pid(paths: RunPaths, rank: int) -> int:
    wait_until(lambda: rank in read_records(paths.root), 120, f"rank {rank}'s record", paths)
    return int(read_records(paths.root)[rank]["pid"])


@pytest.mark.parametrize("stage", [2, 3])
def test_two_cpu_ranks_train_through_the_launcher(tmp_path, cpu_ranks, start, stage):
    t0 = time.monotonic()
    paths = start(mp_plan(tmp_path, stage=stage, save_interval=12), cpu_ranks)
    end = ended(paths)
    took = time.monotonic() - t0
    assert end["state"] == "completed", end
    started = events(paths, "run_started")
    assert len(started) == 1 and started[0]["world_size"] == 2
    steps = [e["step"] for e in events(paths, "step")]
    assert steps == [4, 8, 12, 16, 20, 24], "one event stream: every logged step once"
    losses = [e["loss"] for e in events(paths, "step")]
    assert losses[-1] < losses[0] - 0.5, losses  # it learns (6.6 -> about 5 in these runs)
    assert [c["step"] for c in events(paths, "checkpoint")] == [12, 24]
    # Every rank ran, in its own process, with the environment zerotui's launcher built.
    records = read_records(paths.root)
    assert sorted(records) == [0, 1] and records[0]["pid"] != records[1]["pid"]
    for rec in records.values():
        assert rec["state"] == "completed" and rec["step"] == 24
        env = rec["env"]
        assert (env["NCCL_NVLS_ENABLE"], env["TORCH_SYMM_MEM_DISABLE_MULTICAST"], env["NVSHMEM_DISABLE_NVLS"]) \
            == ("0", "1", "1")
        assert env["WORLD_SIZE"] == "2" and env["DEEPSPEED_TIMEOUT"] == "10"
    log = paths.log.read_text()
    assert "deepspeed.launcher.runner --num_gpus 2" in log and "zerotui.core.run.supervisor" in log
    for rank in (0, 1):
        line = next(ln for ln in log.splitlines() if ln.startswith(f"zerotui worker rank {rank} ("))
        assert "NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1" in line
    # status.json: the final state and every pid (supervisor, runner, launch, both ranks), all gone.
    st = read_status(paths)
    assert st["state"] == "completed" and {records[0]["pid"], records[1]["pid"]} <= set(st["pids"])
    assert len(st["pids"]) >= 5 and st["pid"] in st["pids"]
    assert end["pids"] == st["pids"] and end["world_size"] == 2 and end["rank"] is None
    assert not end["gpu_release"]["checked"] and "skipped" in end["gpu_release"]["note"]  # no NVML here
    telemetry = events(paths, "telemetry")
    assert telemetry and all(t["gpus"] == [] for t in telemetry)  # rank 0 samples, no GPU on a CPU box
    last = events(paths, "step")[-1]
    print(f"\nZeRO-{stage}, 2 CPU ranks: loss {losses[0]:.3f} -> {losses[-1]:.3f} over 24 steps, "
          f"{last['tokens_per_s']:.0f} tokens/s, step {last['step_time']:.3f} s; start to all exited {took:.1f} s")


def test_graceful_stop_ends_every_process_with_a_checkpoint(tmp_path, cpu_ranks, start):
    paths = start(mp_plan(tmp_path, max_steps=2000, log_interval=2), cpu_ranks)
    wait_until(lambda: len(events(paths, "step")) >= 2, 300, "step 4", paths)
    during = run_pids(paths)
    assert len(during) >= 5  # supervisor, runner, launch and two ranks, listed while it runs
    t0 = time.monotonic()
    stop = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "stop", paths.name, "--wait", "--runs-dir",
                           str(paths.root.parent)], capture_output=True, text=True, timeout=300)
    took = time.monotonic() - t0
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert stop.stdout.splitlines()[-1].endswith("exited")  # after the end: every listed process is gone
    assert '"command": "stop"' in paths.control.read_text()  # it went through control.jsonl
    end = ended(paths)
    assert end["state"] == "stopped" and "stop requested by zerotui stop" in end["reason"]
    records = read_records(paths.root)
    assert {r: rec["state"] for r, rec in records.items()} == {0: "stopped", 1: "stopped"}
    assert records[0]["step"] == records[1]["step"] == end["step"]  # both stopped at the same step
    checkpoints = events(paths, "checkpoint")
    assert [c["step"] for c in checkpoints] == [end["step"]]
    assert (paths.checkpoints / f"step{end['step']}" / "zerotui_rng_rank1.pt").exists()  # rank 1 saved too
    assert not any(pid_alive(p) for p in during | run_pids(paths))
    st = read_status(paths)
    assert st["state"] == "stopped" and "skipped" in st["gpu_release"]["note"]  # no NVML on a CPU machine
    print(f"\ngraceful stop of 2 CPU ranks: `zerotui stop --wait` returned after {took:.1f} s "
          f"(checkpoint at step {end['step']}, {len(during)} processes all exited)")


def test_killing_rank_1_fails_the_run_naming_it(tmp_path, cpu_ranks, start):
    paths = start(mp_plan(tmp_path, max_steps=2000, log_interval=2), cpu_ranks)
    wait_until(lambda: bool(events(paths, "step")), 300, "the first step", paths)
    during = run_pids(paths)
    victim = rank_pid(paths, 1)
    killed_at = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    end = ended(paths, timeout=120)
    took = time.monotonic() - killed_at
    assert end["state"] == "failed" and end["rank"] == 1
    assert end["reason"].startswith(f"rank 1 (pid {victim}) died without reporting why: killed by SIGKILL"), end
    alerts = [a for a in events(paths, "alert") if a["kind"] == "rank"]
    assert len(alerts) == 1 and alerts[0]["rank"] == 1
    assert took < 60, f"the failure took {took:.0f} s to be reported"
    assert not any(pid_alive(p) for p in during | run_pids(paths))
    st = read_status(paths)
    assert st["state"] == "failed" and st["rank"] == 1
    print(f"\nkill -9 of rank 1: run_finished (failed, rank 1) and every process gone {took:.1f} s later")


def test_an_exception_on_rank_1_fails_the_run_with_its_reason(tmp_path, cpu_ranks, start, monkeypatch):
    # Fault injection at the process boundary: a sitecustomize that only rank 1 acts on (RANK=1) makes
    # its 6th optimizer step raise; everything else is the real run.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os\n"
        "if os.environ.get('RANK') == '1':\n"
        "    from zerotui.core.train import loop\n"
        "    _step = loop.TrainLoop._one_step\n"
        "    def _failing(self):\n"
        "        if self.step + 1 == 6:\n"
        "            raise RuntimeError('injected failure on rank 1')\n"
        "        return _step(self)\n"
        "    loop.TrainLoop._one_step = _failing\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    paths = start(mp_plan(tmp_path, max_steps=400, log_interval=1), cpu_ranks)
    end = ended(paths)
    assert end["state"] == "failed" and end["rank"] == 1
    assert end["reason"].startswith("rank 1 failed: RuntimeError in training step 6: injected failure on rank 1"), end
    assert max(e["step"] for e in events(paths, "step")) == 5
    records = read_records(paths.root)
    assert records[1]["cause"] == "error" and records[0]["state"] == "failed" and records[0]["cause"] == "peer"


def test_a_hung_rank_ends_the_run_after_the_collective_timeout(tmp_path, cpu_ranks, start, monkeypatch):
    monkeypatch.setenv("DEEPSPEED_TIMEOUT", "1")  # minutes; the default is 10
    paths = start(mp_plan(tmp_path, max_steps=2000, log_interval=2), cpu_ranks)
    wait_until(lambda: bool(events(paths, "step")), 300, "the first step", paths)
    during = run_pids(paths)
    victim = rank_pid(paths, 1)
    stopped_at = time.monotonic()
    os.kill(victim, signal.SIGSTOP)  # alive but silent: what a hung GPU or a stuck NCCL call looks like
    try:
        end = ended(paths, timeout=300)
    finally:
        try:
            os.kill(victim, signal.SIGCONT)
        except ProcessLookupError:
            pass
    took = time.monotonic() - stopped_at
    assert end["state"] == "failed" and end["rank"] == 1, end
    assert f"rank 1 (pid {victim}) stopped answering: rank 0's collective timed out" in end["reason"]
    # 60 s timeout + DeepSpeed's launcher: 1 s poll + 30 s between SIGTERM and SIGKILL of the stopped rank.
    assert 55 < took < 150, took
    assert not any(pid_alive(p) for p in during | run_pids(paths))
    print(f"\nSIGSTOP of rank 1 with DEEPSPEED_TIMEOUT=1: run_finished (failed, rank 1) {took:.1f} s later")
