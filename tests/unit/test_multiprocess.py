"""Several processes, without training: the launcher argv and environment, GPU choices refused before
launch, rank records, the verdict on how a run ended, the GPU-release check, and the supervisor as the
one writer of run_finished.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from zerotui.core.errors import HardwareError
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.run.launcher import gpu_choice_problem, launcher_env, worker_argv
from zerotui.core.train.distributed import DEFAULT_TIMEOUT_MINUTES, collective_timeout
from zerotui.core.plan.schema import Plan
from zerotui.core.run.rank_records import (describe_wait_status, failure_cause, proc_state, read_records,
                                       record_end, record_start)
from zerotui.core.run.folder import RunPaths, read_status
from zerotui.core.run.verdict import decide
from multiprocess_shared import run_pids  # noqa: F401
from run_events import events
from worker_runs import supervised


def gpus(n: int) -> Hardware:
    return Hardware(gpus=[GpuInfo(i, "H200", 141 << 30, 141 << 30, (9, 0), True) for i in range(n)])


def test_every_run_starts_under_the_supervisor_with_the_worker_or_the_launcher_as_its_child(tmp_path):
    one = worker_argv(Plan(), tmp_path, gpus(1), python="py")
    assert one == ["py", "-m", "zerotui.core.run.supervisor", str(tmp_path), "--direct", "--",
                   "py", "-m", "zerotui.core.run.worker", str(tmp_path)]
    two = worker_argv(Plan(gpus=2), tmp_path, Hardware(), python="py", resume=True)
    cut = two.index("--")
    assert two[:cut] == ["py", "-m", "zerotui.core.run.supervisor", str(tmp_path), "--local-ranks", "2"]
    inner = two[cut + 1:]
    assert inner[:3] == ["py", "-m", "deepspeed.launcher.runner"] and inner[-2:] == [str(tmp_path), "--resume"]
    assert inner[inner.index("--num_gpus") + 1] == "2"
    ids = worker_argv(Plan(gpu_ids=[1, 3]), tmp_path, gpus(4), python="py")
    assert ids[ids.index("--local-ranks") + 1] == "2" and ids[ids.index("--include") + 1] == "localhost:1,3"


def test_gpu_choices_this_machine_lacks_are_refused_before_launch():
    assert gpu_choice_problem(Plan(gpus=2), Hardware()) is None  # CPU: 2 processes (how CI tests it)
    assert gpu_choice_problem(Plan(gpu_ids=[0, 1]), gpus(2)) is None
    field, message, hint = gpu_choice_problem(Plan(gpu_ids=[1, 5]), gpus(2))
    assert field == "gpu_ids" and "0-1, not 5" in message and "below 2" in hint
    field, message, _ = gpu_choice_problem(Plan(gpus=4), gpus(2))
    assert field == "gpus" and "has 2 GPU(s)" in message
    field, message, _ = gpu_choice_problem(Plan(gpu_ids=[0]), Hardware())
    assert field == "gpu_ids" and "no GPU" in message
    from zerotui.core.run.start import preflight

    with pytest.raises(HardwareError, match="not 5"):
        preflight(Plan(model="tiny", gpu_ids=[5]), gpus(2))


def test_collective_timeout_is_ten_minutes_unless_the_user_says_otherwise():
    assert DEFAULT_TIMEOUT_MINUTES == "10" and launcher_env({})["DEEPSPEED_TIMEOUT"] == "10"
    assert collective_timeout({}) == timedelta(minutes=10)
    assert collective_timeout({"DEEPSPEED_TIMEOUT": "3"}) == timedelta(minutes=3)
    assert collective_timeout({"DEEPSPEED_TIMEOUT": "soon"}) == timedelta(minutes=10)


def test_failure_cause_tells_a_lost_peer_and_a_timeout_from_a_rank_own_error():
    gloo_reset = RuntimeError("[gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:36746: Connection reset by "
                              "peer. This is typically caused by a remote worker hanging")
    gloo_timeout = RuntimeError("[gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 60000ms for recv "
                                "operation to complete")
    assert failure_cause(gloo_reset) == "peer"
    assert failure_cause(gloo_timeout) == "timeout"
    assert failure_cause(ValueError("bad batch")) == "error"
    try:
        try:
            raise gloo_reset
        except RuntimeError as inner:
            raise RuntimeError("step failed") from inner
    except RuntimeError as outer:
        assert failure_cause(outer) == "peer"  # the cause chain is followed


def test_a_zombie_still_tells_how_it_died():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while proc_state(p.pid)[0] == "alive" and time.monotonic() < deadline:
            time.sleep(0.05)
        state, status = proc_state(p.pid)
        assert state == "zombie" and describe_wait_status(status) == "killed by SIGKILL"
    finally:
        p.wait()
    assert proc_state(p.pid) == ("gone", None)
    assert describe_wait_status(1 << 8) == "exited with code 1"


def _rec(rank, state=None, cause="", at=0.0, reason="r"):
    rec = {"rank": rank, "pid": 100 + rank, "started": 0.0}
    if state:
        rec.update(state=state, reason=reason, cause=cause, ended=at, step=7)
    return rec


def test_decide_blames_the_rank_that_died_first_not_the_one_that_lost_it():
    records = {0: _rec(0, "failed", "peer", at=10.0, reason="Connection reset by peer"), 1: _rec(1)}
    deaths = {0: {"pid": 100, "at": 10.1, "status": 256}, 1: {"pid": 101, "at": 10.15, "status": 9}}
    state, reason, rank = decide(records, deaths, 247)
    assert state == "failed" and rank == 1
    assert reason.startswith("rank 1 (pid 101) died without reporting why: killed by SIGKILL")
    assert "rank 0 then failed too (peer)" in reason


def test_decide_prefers_a_rank_own_error_and_names_it():
    records = {0: _rec(0, "failed", "peer", at=5.2), 1: _rec(1, "failed", "error", at=5.0,
                                                             reason="RuntimeError in training step 4: boom")}
    state, reason, rank = decide(records, {}, 1)
    assert (state, rank) == ("failed", 1) and reason == "rank 1 failed: RuntimeError in training step 4: boom"
    same = {r: _rec(r, "failed", "error", at=1.0 + r, reason="DataError: no rows") for r in (0, 1)}
    assert decide(same, {}, 1)[1] == "every rank failed: DataError: no rows"


def test_decide_names_a_hung_rank_after_a_timeout():
    records = {0: _rec(0, "failed", "timeout", at=60.0, reason="Timed out waiting 60000ms"), 1: _rec(1)}
    deaths = {0: {"pid": 100, "at": 61.0, "status": 256}, 1: {"pid": 101, "at": 91.0, "status": 9}}
    state, reason, rank = decide(records, deaths, 1)
    assert state == "failed" and rank == 1
    assert "rank 1 (pid 101) stopped answering: rank 0's collective timed out" in reason


def test_decide_keeps_rank0_result_when_all_ended_cleanly():
    records = {r: _rec(r, "stopped", at=20.0 + r, reason="stop requested by test") for r in (0, 1)}
    deaths = {0: {"pid": 100, "at": 22.0, "status": 0}, 1: {"pid": 101, "at": 22.5, "status": 0}}
    assert decide(records, deaths, 0) == ("stopped", "stop requested by test", None)
    # A rank ended for lingering after rank 0 finished does not turn a completed run into a failure.
    records = {0: _rec(0, "completed", at=30.0, reason="reached step 20"), 1: _rec(1)}
    assert decide(records, {1: {"pid": 101, "at": 95.0, "status": 9}}, 0)[0] == "completed"
    assert decide({}, {}, 2)[1].startswith("the DeepSpeed launcher exited with code 2 before any rank started")
    assert decide(records, {}, 0, forced="ended at once by a third signal")[0] == "stopped"


def test_rank_records_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    start = record_start(tmp_path, 1)
    assert read_records(tmp_path)[1]["env"]["NCCL_NVLS_ENABLE"] == "0" and "state" not in read_records(tmp_path)[1]
    record_end(tmp_path, 1, start, "failed", "boom", "error", 3, at=12.5)
    rec = read_records(tmp_path)[1]
    assert (rec["state"], rec["cause"], rec["step"], rec["ended"], rec["pid"]) == ("failed", "error", 3, 12.5, os.getpid())


def test_gpu_release_check_reads_nvml_process_lists(monkeypatch):
    from nvml_fake import H100, fake

    from zerotui.core.hardware.gpu_release import gpu_memory_held

    class Proc:
        def __init__(self, pid, used):
            self.pid, self.usedGpuMemory = pid, used

    nv = fake(H100, H100)
    running = {0: [Proc(4242, 30 << 30), Proc(999, 1 << 30)], 1: []}
    nv.nvmlDeviceGetComputeRunningProcesses = lambda h: running[h]
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    held = gpu_memory_held([4242, 4243])
    assert held["checked"] and held["held"] == [{"gpu": 0, "pid": 4242, "bytes": 30 << 30}]
    assert "pid 4242 on GPU 0" in held["note"]
    running[0] = [Proc(999, 1 << 30)]  # another user's process is not ours
    freed = gpu_memory_held([4242, 4243])
    assert freed["checked"] and freed["held"] == [] and "no GPU memory held" in freed["note"]
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: skipped, with the reason
    skipped = gpu_memory_held([4242])
    assert not skipped["checked"] and skipped["note"].startswith("GPU memory check skipped")


def helper_run(root: Path, **plan) -> RunPaths:
    from zerotui.core.run.folder import new_run_dir

    paths = new_run_dir(root, "w")
    paths.plan.write_text(Plan(name="w", model="tiny", data="sample", **plan).to_yaml())
    return paths


def test_the_supervisor_writes_the_one_run_finished_and_the_worker_only_its_record(tmp_path):
    paths = helper_run(tmp_path, max_steps=5)
    env = dict(os.environ, ZEROTUI_TELEMETRY_S="0", PYTHONUNBUFFERED="1")
    with open(paths.log, "ab") as log:
        sup = subprocess.run(supervised(paths), stdout=log, stderr=subprocess.STDOUT, env=env, timeout=120)
    assert sup.returncode == 0, paths.log.read_text()[-2000:]
    finished = events(paths, "run_finished")
    assert len(finished) == 1 and finished[0]["state"] == "completed" and finished[0]["step"] == 5
    assert finished[0]["world_size"] == 1 and finished[0]["rank"] is None and len(finished[0]["pids"]) == 2
    rec = read_records(paths.root)[0]  # what the worker wrote of its own end
    assert rec["state"] == "completed" and rec["step"] == 5 and rec["pid"] in finished[0]["pids"]
    st = read_status(paths)
    assert st["state"] == "completed" and st["gpu_release"]["checked"] is False and st["finished"] >= rec["ended"]
    assert "zerotui supervisor: run completed" in paths.log.read_text()
    assert subprocess.run([sys.executable, "-m", "zerotui.core.run.supervisor", str(paths.root)],
                          capture_output=True).returncode == 2  # no command: a usage line, no traceback


def test_run_finished_has_one_writer_in_the_code():
    """Only the supervisor emits run_finished (a second writer would race it at the end of every run), and
    the rank-0 worker's record of an end its killed supervisor cannot write (run/orphan_end.py, which
    writes only once that supervisor is gone: tests/unit/test_worker.py)."""
    import ast

    import zerotui.core

    core = Path(zerotui.core.__file__).parent
    writers = set()
    for f in core.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                    and node.args[0].value == "run_finished" and getattr(node.func, "attr", "") == "emit":
                writers.add(f.relative_to(core).as_posix())
    assert writers == {"run/supervisor.py", "run/orphan_end.py"}
