"""core/launch.py and the whole run lifecycle with the real worker, DeepSpeed and the tiny model on CPU.

The slow tests start real detached runs through ``start_run`` (or the CLI), exactly as a user does, and
act on them only through the run folder, signals and the CLI: stop via control.jsonl and SIGTERM,
kill -9 then ``zerotui resume``, a run that outlives the process that launched it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from zerotui.core.errors import HardwareError, PlanError, RunError
from zerotui.core.events import read_all, validate
from zerotui.core.hardware import detect
from zerotui.core.launch import resume_run, start_run
from zerotui.core.plan import Plan
from zerotui.core.runs import RunPaths, read_status, run_state, send_control

try:
    import zerotui.core.engine  # noqa: F401
    HAVE_ENGINE = True
except ImportError:
    HAVE_ENGINE = False
needs_engine = pytest.mark.skipif(not HAVE_ENGINE, reason="core/engine.py is not in the tree yet")

@pytest.fixture
def tmp_path():
    """A private temporary folder: pytest's shared basetemp keeps only the last 3 sessions, and other
    sessions on this machine can remove it under a run that takes minutes."""
    with tempfile.TemporaryDirectory(prefix="zerotui-test-") as d:
        yield Path(d)



def tiny_plan(tmp_path: Path, **fields) -> Plan:
    base = dict(name="tiny", model="tiny", data="sample", precision="bf16", stage=2, micro_batch=2,
                seq_len=64, max_steps=40, log_interval=1, save_interval=10, save_minutes=0,
                eval_fraction=0.0, save_final=False, runs_dir=str(tmp_path / "runs"), lr=1e-3,
                max_samples=400)
    base.update(fields)
    return Plan(**base)


def evs(paths: RunPaths, type_: str | None = None) -> list[dict]:
    return [e for e in read_all(paths.events) if type_ is None or e["type"] == type_]


def wait_until(cond, timeout: float, what: str, paths: RunPaths | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    log = paths.log.read_text()[-3000:] if paths is not None and paths.log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{log}")


def finished(paths: RunPaths, timeout: float = 300) -> dict:
    wait_until(lambda: bool(evs(paths, "run_finished")), timeout, "run_finished", paths)
    wait_until(lambda: not _alive(read_status(paths).get("pid")), 30, "the worker to exit", paths)
    all_events = evs(paths)
    for e in all_events:
        assert validate(e) == [], e
    return evs(paths, "run_finished")[-1]


def _alive(pid) -> bool:
    from zerotui.core.runs import pid_alive

    return pid_alive(pid) if pid else False


def cli(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout)


# -- refusals: nothing is written, nothing is started ------------------------------------------------

def test_unwritable_runs_dir_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(HardwareError, match="runs folder .* is not writable"):
        start_run(tiny_plan(tmp_path, runs_dir=str(blocker / "runs")), hardware=detect(probe_disks=False))


def test_unwritable_nvme_path_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    plan = tiny_plan(tmp_path, stage=3, offload_optimizer="nvme", nvme_path=str(blocker / "swap"))
    with pytest.raises(HardwareError, match="NVMe offload folder .* is not writable"):
        start_run(plan, hardware=detect(probe_disks=False))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_missing_data_file_is_refused_before_start(tmp_path):
    from zerotui.core.errors import DataError

    with pytest.raises(DataError, match="data file .*missing.jsonl does not exist"):
        start_run(tiny_plan(tmp_path, data=str(tmp_path / "missing.jsonl")), hardware=detect(probe_disks=False))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_plan_that_does_not_validate_is_refused(tmp_path):
    bad = Plan.model_construct(**{**tiny_plan(tmp_path).model_dump(), "stage": 9})
    with pytest.raises(PlanError, match="stage"):
        start_run(bad, hardware=detect(probe_disks=False))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_plan_that_does_not_fit_is_refused_with_numbers_unless_forced(tmp_path):
    from zerotui.core.hardware import stated_hardware

    small = stated_hardware(ram="64MiB", base=detect(probe_disks=False))
    with pytest.raises(HardwareError) as err:
        start_run(tiny_plan(tmp_path), hardware=small)
    assert "the plan does not fit this machine: host RAM" in err.value.message
    assert "of 0.1 GiB (too much)" in err.value.message and "--force" in err.value.hint
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    paths = start_run(tiny_plan(tmp_path), hardware=small, force=True)
    # The worker is up once it has written its own status (its signal handlers are installed first).
    wait_until(lambda: read_status(paths).get("worker_started"), 60, "the worker", paths)
    pid = read_status(paths)["pid"]
    for _ in range(3):  # end it at once: this test is about the launch, not the training
        os.kill(pid, signal.SIGTERM)
        time.sleep(0.3)
    end = finished(paths, timeout=30)
    assert end["state"] == "stopped" and "third signal" in end["reason"]


def test_two_resumes_at_once_start_one_worker(tmp_path):
    import threading

    from zerotui.core.runs import new_run_dir, write_status

    paths = new_run_dir(tmp_path / "runs", "r")
    paths.plan.write_text(tiny_plan(tmp_path).to_yaml())
    write_status(paths, state="stopped", pid=999999999, step=5)
    outcomes: list = []

    def go() -> None:
        try:
            outcomes.append(resume_run(paths, hardware=detect(probe_disks=False)))
        except RunError as err:
            outcomes.append(err)

    threads = [threading.Thread(target=go) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    started = [o for o in outcomes if isinstance(o, RunPaths)]
    refused = [o for o in outcomes if isinstance(o, RunError)]
    assert len(started) == 1 and len(refused) == 1, outcomes
    assert f"run {paths.name} is still starting" in refused[0].message
    wait_until(lambda: read_status(paths).get("worker_started"), 60, "the worker", paths)
    for _ in range(3):
        os.kill(read_status(paths)["pid"], signal.SIGTERM)
        time.sleep(0.3)
    assert finished(paths, timeout=30)["state"] == "stopped"


def test_resume_of_a_folder_that_is_not_a_run(tmp_path):
    with pytest.raises(RunError, match="not a run folder"):
        resume_run(RunPaths(tmp_path))


# -- real runs -----------------------------------------------------------------------------------------

@needs_engine
@pytest.mark.slow
def test_detached_run_outlives_its_launcher(tmp_path):
    data = tmp_path / "data.jsonl"
    from zerotui.core.tiny import SAMPLE_FILE

    data.write_text(SAMPLE_FILE.read_text())
    plan = tiny_plan(tmp_path, max_steps=12, data="data.jsonl")
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(plan.to_yaml())
    # The launcher is a process that starts the run and exits at once, from a folder where the
    # relative data path means something: the frozen plan must hold the absolute path.
    code = ("import sys, time; from zerotui.core.plan import load_plan; from zerotui.core.launch import start_run;"
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
    wait_until(lambda: bool(evs(paths, "step")), 240, "the first step", paths)
    end = finished(paths)
    assert end["state"] == "completed", end
    assert [e["step"] for e in evs(paths, "step")] == list(range(1, 13))
    assert run_state(paths) == "completed"
    assert evs(paths, "phase")  # start-up was visible


@needs_engine
@pytest.mark.slow
def test_stop_via_control_then_sigterm_each_checkpoint_and_resume(tmp_path):
    plan = tiny_plan(tmp_path, max_steps=400, save_interval=0)
    paths = start_run(plan, hardware=detect(probe_disks=False))
    wait_until(lambda: len(evs(paths, "step")) >= 3, 240, "step 3", paths)
    sent = send_control(paths, "stop", by="test")
    end = finished(paths)
    assert end["state"] == "stopped" and "stop requested by test" in end["reason"]
    ack = [a for a in evs(paths, "control_ack") if a["id"] == sent["id"]]
    assert ack and ack[0]["ok"]
    ckpts = evs(paths, "checkpoint")
    assert len(ckpts) == 1 and ckpts[0]["step"] == end["step"]
    first_stop = end["step"]

    r = cli("resume", paths.name, "--runs-dir", str(paths.root.parent))
    assert r.returncode == 0, r.stderr
    assert f"continuing from the checkpoint at step {first_stop}" in r.stdout
    wait_until(lambda: any(e["step"] > first_stop + 2 for e in evs(paths, "step")), 240, "steps after resume", paths)
    os.kill(read_status(paths)["pid"], signal.SIGTERM)
    end2 = finished(paths)
    assert end2["state"] == "stopped" and "SIGTERM" in end2["reason"]
    assert evs(paths, "checkpoint")[-1]["step"] == end2["step"] > first_stop
    assert len(evs(paths, "run_finished")) == 2  # one per worker, each the last event of its segment


@needs_engine
@pytest.mark.slow
def test_kill9_then_resume_keeps_step_numbers(tmp_path):
    plan = tiny_plan(tmp_path, max_steps=30, save_interval=5)
    paths = start_run(plan, hardware=detect(probe_disks=False))
    wait_until(lambda: any(e["step"] >= 12 for e in evs(paths, "step")), 300, "step 12", paths)
    pid = read_status(paths)["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: run_state(paths) == "lost", 30, "lost state", paths)
    r = cli("runs", "--json", "--runs-dir", str(paths.root.parent))
    rec = [x for x in json.loads(r.stdout) if x["name"] == paths.name][0]
    assert rec["state"] == "lost" and rec["heartbeat"] is not None
    r = cli("stop", paths.name, "--runs-dir", str(paths.root.parent))
    assert r.returncode == 2 and "is lost" in r.stderr

    ckpt = evs(paths, "checkpoint")[-1]["step"]
    before = len(evs(paths))
    r = cli("resume", paths.name, "--foreground", "--runs-dir", str(paths.root.parent), timeout=400)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].startswith("run completed")
    resumed = evs(paths)[before:]
    started = [e for e in resumed if e["type"] == "run_started"]
    assert len(started) == 1 and started[0].get("resumed_from") in (ckpt, f"step{ckpt}")
    steps = [e["step"] for e in resumed if e["type"] == "step"]
    assert steps == list(range(ckpt + 1, 31)), steps  # none repeated, none lost after the checkpoint
    assert [e["type"] for e in resumed].count("run_finished") == 1
    assert run_state(paths) == "completed"
    r = cli("resume", paths.name, "--runs-dir", str(paths.root.parent))
    assert r.returncode == 2 and "nothing to resume" in r.stderr


@needs_engine
@pytest.mark.slow
def test_train_foreground_prints_steps_and_ctrl_c_stops_gracefully(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "zerotui.cli.main", "train", "--model", "tiny", "--data", "sample",
                             "--stage", "2", "--micro-batch", "2", "--seq-len", "64", "--max-steps", "500",
                             "--log-interval", "1", "--save-interval", "0", "--save-minutes", "0",
                             "--eval-fraction", "0", "--no-save-final", "--max-samples", "400",
                             "--runs-dir", str(runs), "--foreground"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
