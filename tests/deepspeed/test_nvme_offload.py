"""NVMe offload with real DeepSpeed on the CPU (its async_io op, built against libaio, writing real swap
files): the optimizer state and the weights go to the run's own folder inside nvme_path, training
matches offload to host RAM step for step, a stopped run resumes without its swap files, and the run's
supervisor leaves nvme_path as it found it."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from engine_runs import events, losses, make_run, run_engine, run_engine_ranks
from zerotui.core.deepspeed.nvme_swap import remove_swap, swap_dir
from zerotui.core.run.folder import RunPaths

RUN = dict(stage=3, save_interval=5, keep_checkpoints=4, log_interval=1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def test_nvme_offload_trains_like_host_offload_and_resumes_without_its_swap_files(tmp_path, cache):
    nvme = tmp_path / "nvme"
    nvme.mkdir()
    (nvme / "keep.txt").write_text("the user's")
    host = make_run(tmp_path / "host", offload_optimizer="cpu", offload_params="cpu", **RUN)
    assert run_engine(host, cache=cache)["state"] == "completed"

    paths = make_run(tmp_path / "nv", offload_optimizer="nvme", offload_params="nvme", nvme_path=str(nvme), **RUN)
    stopped = run_engine(paths, "--stop-after", "7", cache=cache)
    assert (stopped["state"], stopped["step"]) == ("stopped", 7), stopped
    mine = swap_dir(nvme, paths.root)
    assert sorted(p.name for p in nvme.iterdir()) == ["keep.txt", mine.name]  # nothing outside its folder
    # The optimizer's partition as DeepSpeed swaps it: fp32 weights and Adam's two moments, a file each
    swapped = {p.name.split("-")[0] if "-" in p.name else "fp32": p.stat().st_size
               for p in (mine / "zero_stage_3" / "optimizer" / "rank0").glob("*.swp")}
    assert set(swapped) == {"fp32", "exp_avg", "exp_avg_sq"} and len(set(swapped.values())) == 1
    assert (mine / "zero_stage_3").is_dir() and any((mine / "zero_stage_3").glob("*params"))

    # What the supervisor does once the run's processes are gone; resume needs only the checkpoint
    assert remove_swap(nvme, paths.root).startswith(f"removed the NVMe swap folder {mine}")
    resumed = run_engine(paths, "--resume", cache=cache)
    assert (resumed["state"], resumed["step"]) == ("completed", 20), resumed
    ref, got = losses(host), losses(paths)
    assert sorted(got) == list(range(1, 21))
    # The same arithmetic through the disk as through host RAM (CPU Adam on the same fp32 partition), to the
    # bit, across the stop and the resume. Without core/train/nvme_resume.py the moments, step count and
    # learning rate started afresh after the resume: up to 3.3% apart from step 9 on.
    assert [got[s] for s in range(1, 21)] == [ref[s] for s in range(1, 21)]
    assert got[20] < got[1] - 1.5


def test_a_finished_runs_supervisor_removes_its_swap_folder_and_nothing_else(tmp_path):
    nvme, runs = tmp_path / "nvme", tmp_path / "runs"
    nvme.mkdir()
    (nvme / "keep.txt").write_text("the user's")
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", "--model", "tiny", "--data", "sample",
                        "--stage", "3", "--offload-optimizer", "nvme", "--offload-params", "nvme",
                        "--nvme-path", str(nvme), "--micro-batch", "2", "--seq-len", "64", "--max-steps", "2",
                        "--log-interval", "1", "--save-interval", "0", "--save-minutes", "0", "--eval-fraction", "0",
                        "--no-save-final", "--max-samples", "40", "--runs-dir", str(runs), "--foreground"],
                       check=False, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    (paths,) = [RunPaths(p) for p in runs.iterdir()]
    assert [p.name for p in nvme.iterdir()] == ["keep.txt"] and (nvme / "keep.txt").read_text() == "the user's"
    log = paths.log.read_text()
    said = re.search(r"removed the NVMe swap folder (\S+) \((\d+\.\d+) GiB\)", log)
    assert said and said.group(1) == str(swap_dir(nvme, paths.root)), log[-3000:]
    assert float(said.group(2)) > 0  # it held the swapped state until the run ended


def test_an_fp16_run_resumes_from_nvme_at_the_loss_scale_it_stopped_at(tmp_path, cache):
    """fp16 on this CPU (fault_worker's capability override) with gradients overflowing at steps 3-4, so
    DeepSpeed's dynamic scaler halves 65536 to 32768. DeepSpeed's NVMe resume skips the state dict that holds
    the scaler, and the resumed run began again at 65536; now it goes on at 32768 and trains to the bit as the
    same stop and resume with the optimizer in host RAM, whose scaler DeepSpeed restores itself."""
    nvme = tmp_path / "nvme"
    nvme.mkdir()
    faults = {"ZEROTUI_FAULT": "overflow:3-4", "ZEROTUI_FAULT_FP16": "1"}
    fp16 = dict(RUN, precision="fp16", max_steps=12)
    host = make_run(tmp_path / "host", offload_optimizer="cpu", offload_params="cpu", **fp16)
    assert run_engine(host, "--stop-after", "7", cache=cache, env=faults)["step"] == 7
    assert run_engine(host, "--resume", cache=cache, env=faults)["step"] == 12
    paths = make_run(tmp_path / "nv", offload_optimizer="nvme", offload_params="nvme", nvme_path=str(nvme), **fp16)
    assert run_engine(paths, "--stop-after", "7", cache=cache, env=faults)["step"] == 7
    remove_swap(nvme, paths.root)
    assert run_engine(paths, "--resume", cache=cache, env=faults)["step"] == 12

    def steps(run):
        return {e["step"]: (e["loss_scale"], e["skipped"], e["loss"]) for e in events(run, "step")}

    ref, got = steps(host), steps(paths)
    assert [ref[s][:2] for s in (2, 3, 4, 5)] == [(65536, 0), (65536, 1), (32768, 1), (32768, 0)]
    assert sorted(got) == list(range(1, 13))
    assert [got[s] for s in range(1, 13)] == [ref[s] for s in range(1, 13)]
    assert got[8][0] == 32768


def test_a_swap_folder_removed_during_the_run_is_named_in_its_end_and_resume_writes_it_again(tmp_path):
    """Someone deletes the run's swap folder while it trains: DeepSpeed's next swap-in fails a bare assert
    (swap_tensor/utils.py); the run's end says which folder went, and a resume carries on from the last
    checkpoint with the folder written again."""
    import shutil

    from run_events import wait_until
    from zerotui.core.events.stream import read_all

    nvme, runs = tmp_path / "nvme", tmp_path / "runs"
    nvme.mkdir()
    argv = [sys.executable, "-m", "zerotui.cli.main", "train", "--model", "tiny", "--data", "sample", "--stage", "3",
            "--offload-optimizer", "nvme", "--offload-params", "nvme", "--nvme-path", str(nvme), "--micro-batch", "2",
            "--seq-len", "64", "--max-steps", "100000", "--log-interval", "1", "--save-interval", "5",
            "--save-minutes", "0", "--eval-fraction", "0", "--no-save-final", "--max-samples", "40",
            "--runs-dir", str(runs), "--json"]
    r = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (paths,) = [RunPaths(p) for p in runs.iterdir()]
    wait_until(lambda: events(paths, "checkpoint"), 600, "a checkpoint", paths)
    shutil.rmtree(swap_dir(nvme, paths.root))
    wait_until(lambda: events(paths, "run_finished"), 120, "the run's end", paths)
    (fin,) = events(paths, "run_finished")
    assert fin["state"] == "failed"
    assert f"the swap folder {swap_dir(nvme, paths.root)} is gone" in fin["reason"], fin["reason"]
    assert f"`zerotui resume {paths.name}`" in fin["reason"]
    before = len(read_all(paths.events))
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "resume", paths.name, "--runs-dir", str(runs),
                        "--json"], check=False, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    wait_until(lambda: len([e for e in read_all(paths.events)[before:] if e["type"] == "step"]) >= 3, 600,
               "three steps after the resume", paths)
    assert swap_dir(nvme, paths.root).is_dir()  # written again from the checkpoint
    subprocess.run([sys.executable, "-m", "zerotui.cli.main", "stop", paths.name, "--runs-dir", str(runs), "--now",
                    "--wait"], check=False, capture_output=True, timeout=300)
    wait_until(lambda: len(events(paths, "run_finished")) == 2, 60, "the resumed run's end", paths)
    assert [p.name for p in nvme.iterdir()] == []  # removed by the supervisor before it wrote the end


def test_two_ranks_swap_apart_and_resume_from_nvme_to_the_bit(tmp_path, cache):
    """Two CPU ranks (gloo), as the launcher starts two GPUs' workers: each rank swaps its own partition
    into rank<R> folders inside the run's one swap folder, and after a stop, the folder's removal and a
    resume, each rank's checkpoint file gives back its own Adam state (nvme_resume reads the rank's file):
    the losses match two ranks offloading to host RAM, uninterrupted, to the bit."""
    nvme = tmp_path / "nvme"
    nvme.mkdir()
    host = make_run(tmp_path / "host", world=2, offload_optimizer="cpu", offload_params="cpu", **RUN)
    assert [r["state"] for r in run_engine_ranks(host, 2, cache=cache)] == ["completed"] * 2
    paths = make_run(tmp_path / "nv", world=2, offload_optimizer="nvme", offload_params="nvme", nvme_path=str(nvme),
                     **RUN)
    assert [r["step"] for r in run_engine_ranks(paths, 2, "--stop-after", "7", cache=cache)] == [7, 7]
    mine = swap_dir(nvme, paths.root) / "zero_stage_3"
    assert sorted(p.name for p in (mine / "optimizer").iterdir()) == ["rank0", "rank1"]
    assert all(any((mine / "optimizer" / r).glob("*.swp")) for r in ("rank0", "rank1"))
    remove_swap(nvme, paths.root)
    assert [r["step"] for r in run_engine_ranks(paths, 2, "--resume", cache=cache)] == [20, 20]
    ref, got = losses(host), losses(paths)
    assert sorted(got) == list(range(1, 21))
    assert [got[s] for s in range(1, 21)] == [ref[s] for s in range(1, 21)]
