"""Whole detached runs through ``start_run`` or the CLI, exactly as a user starts them (supervisor,
worker, DeepSpeed, the tiny model on the CPU), acted on only through the run folder, signals and the
CLI: outliving the launcher, stop and resume, kill -9 and resume, --foreground with Ctrl-C.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path


from zerotui.core.hardware.detect import detect
from zerotui.core.run.start import last_checkpoint_step, start_run
from zerotui.core.run.folder import RunPaths, read_status, run_state, send_control

from launch_shared import tiny_plan, finished, _alive  # noqa: F401
from run_events import events, wait_until




def cli(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout)


def test_detached_run_outlives_its_launcher(tmp_path):
    data = tmp_path / "data.jsonl"
    from zerotui.core.paths import SAMPLE_FILE

    data.write_text(SAMPLE_FILE.read_text())
    plan = tiny_plan(tmp_path, max_steps=12, data="data.jsonl")
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan.to_yaml())
    # The launcher is a process that starts the run and exits at once, from a folder where the
    # relative data path means something: the frozen plan must hold the absolute path.
    code = ("import sys, time; from zerotui.core.plan.schema import load_plan; from zerotui.core.run.start import start_run;"
            "t = time.monotonic(); p = start_run(load_plan(sys.argv[1]));"
            "print(p.root); print(time.monotonic() - t)")
    r = subprocess.run([sys.executable, "-c", code, str(plan_file)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    root, took = r.stdout.split()
    paths = RunPaths(Path(root))
    assert float(took) < 10  # returns at once: the worker's imports and DeepSpeed happen elsewhere
    frozen = paths.plan.read_text()
    assert f"data: {data}" in frozen
    assert json.loads(paths.ds_config.read_text())["train_micro_batch_size_per_gpu"] == 2
    assert json.loads(paths.hardware.read_text())["ram_total_bytes"] > 0
    wait_until(lambda: read_status(paths).get("pid") is not None, 30, "the worker's pid", paths)
    pid = read_status(paths)["pid"]
    assert os.getsid(pid) == pid != os.getsid(0)  # its own session: no terminal can hang it up
    wait_until(lambda: bool(events(paths, "step")), 240, "the first step", paths)
    end = finished(paths)
    assert end["state"] == "completed", end
    assert [e["step"] for e in events(paths, "step")] == list(range(1, 13))
    assert run_state(paths) == "completed"
    assert events(paths, "phase")  # start-up was visible


def test_stop_via_control_then_sigterm_each_checkpoint_and_resume(tmp_path):
    plan = tiny_plan(tmp_path, max_steps=400, save_interval=0)
    paths = start_run(plan, hardware=detect(probe_disks=False))
    wait_until(lambda: len(events(paths, "step")) >= 3, 240, "step 3", paths)
    sent = send_control(paths, "stop", by="test")
    end = finished(paths)
    assert end["state"] == "stopped" and "stop requested by test" in end["reason"]
    ack = [a for a in events(paths, "control_ack") if a["id"] == sent["id"]]
    assert ack and ack[0]["ok"]
    ckpts = events(paths, "checkpoint")
    assert len(ckpts) == 1 and ckpts[0]["step"] == end["step"]
    first_stop = end["step"]

    r = cli("resume", paths.name, "--runs-dir", str(paths.root.parent))
    assert r.returncode == 0, r.stderr
    assert f"continuing from the checkpoint at step {first_stop}" in r.stdout
    wait_until(lambda: any(e["step"] > first_stop + 2 for e in events(paths, "step")), 240, "steps after resume", paths)
    os.kill(read_status(paths)["pid"], signal.SIGTERM)
    end2 = finished(paths)
    assert end2["state"] == "stopped" and "SIGTERM" in end2["reason"]
    assert events(paths, "checkpoint")[-1]["step"] == end2["step"] > first_stop
    assert len(events(paths, "run_finished")) == 2  # one per worker, each the last event of its segment


def test_kill9_then_resume_keeps_step_numbers(tmp_path):
    # 120 steps, killed past step 12: the tiny run must still be training when the kill lands, and on a
    # loaded 2-core machine the test's polling can lag the worker by many steps (a 30-step run once
    # finished before it)
    plan = tiny_plan(tmp_path, max_steps=120, save_interval=5)
    paths = start_run(plan, hardware=detect(probe_disks=False))
    wait_until(lambda: any(e["step"] >= 12 for e in events(paths, "step")), 300, "step 12", paths)
    # every process of the run at once (a power cut, an OOM-killed session): killed alone, the supervisor
    # leaves a worker that trains on and records its own end (core/run/orphan_end.py)
    for pid in {read_status(paths)["pid"], *read_status(paths)["pids"]}:
        os.kill(pid, signal.SIGKILL)
    assert not events(paths, "run_finished"), "the run finished before the kill: give it more steps"
    # lost as soon as every pid of the status is gone, else once the heartbeat is LOST_AFTER_S (30 s) old:
    # wait past that, not exactly that long
    wait_until(lambda: run_state(paths) == "lost", 90, "lost state", paths)
    r = cli("runs", "--json", "--runs-dir", str(paths.root.parent))
    rec = [x for x in json.loads(r.stdout) if x["name"] == paths.name][0]
    assert rec["state"] == "lost" and rec["heartbeat"] is not None
    r = cli("stop", paths.name, "--runs-dir", str(paths.root.parent))
    assert r.returncode == 2 and "is lost" in r.stderr

    # The newest complete checkpoint on disk is where a resume goes on. Its event can be missing: a kill
    # that lands after the save's files and marker but before the worker reports it (CI, 2026-12-07: the
    # stream's last checkpoint said 5, the resume rightly took step10).
    ckpt = last_checkpoint_step(paths)
    assert ckpt is not None and ckpt >= events(paths, "checkpoint")[-1]["step"]
    before = len(events(paths))
    r = cli("resume", paths.name, "--foreground", "--runs-dir", str(paths.root.parent), timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].startswith("run completed")
    resumed = events(paths)[before:]
    started = [e for e in resumed if e["type"] == "run_started"]
    assert len(started) == 1 and started[0].get("resumed_from") in (ckpt, f"step{ckpt}")
    steps = [e["step"] for e in resumed if e["type"] == "step"]
    assert steps == list(range(ckpt + 1, 121)), steps  # none repeated, none lost after the checkpoint
    assert [e["type"] for e in resumed].count("run_finished") == 1
    assert run_state(paths) == "completed"
    r = cli("resume", paths.name, "--runs-dir", str(paths.root.parent))
    assert r.returncode == 2 and "nothing to resume" in r.stderr


def test_train_foreground_prints_steps_and_ctrl_c_stops_gracefully(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "zerotui.cli.main", "train", "--model", "tiny", "--data", "sample",
                             "--stage", "2", "--micro-batch", "2", "--seq-len", "64", "--max-steps", "500",
                             "--log-interval", "1", "--save-interval", "0", "--save-minutes", "0",
                             "--eval-fraction", "0", "--no-save-final", "--max-samples", "400",
                             "--runs-dir", str(runs), "--foreground"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # As a terminal's foreground job: a suite started in the background of a
                            # non-interactive shell has SIGINT ignored, and a child would inherit that.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("step 3/500"):
            break
    proc.send_signal(signal.SIGINT)  # what Ctrl-C in the terminal does to the foreground process
    rest, err = proc.communicate(timeout=300)
    lines += rest.splitlines()
    assert proc.returncode == 0, err
    assert lines[0].startswith("run ") and "(Ctrl-C stops it gracefully)" in lines[0]
    assert "[initialising DeepSpeed]" in lines and any(ln.startswith("run started: 500 steps") for ln in lines)
    assert any(ln.startswith("stopping gracefully: a checkpoint first") for ln in lines)
    assert any(ln.startswith("checkpoint at step ") for ln in lines)
    assert lines[-1].startswith("run stopped: stop requested by zerotui --foreground (Ctrl-C)")
    (paths,) = [RunPaths(p) for p in runs.iterdir()]
    assert run_state(paths) == "stopped"
