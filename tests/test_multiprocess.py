"""Several processes through DeepSpeed's own launcher, on the CPU (gloo): what CI can check of issue 7.

The slow tests start real detached runs with ``start_run`` (``--gpus 2`` on a machine without GPUs is
two CPU ranks), so the whole chain runs as a user's would: zerotui's supervisor → ``deepspeed`` runner →
``deepspeed.launcher.launch`` → two ``zerotui.core.worker`` ranks training the tiny model with ZeRO.
They act on runs only through the run folder, the CLI and signals. The fast tests check the pieces that
decide what a user is told (which rank failed and why) without starting DeepSpeed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pytest

from zerotui.core.errors import HardwareError
from zerotui.core.events import read_all, validate
from zerotui.core.hardware_types import GpuInfo, Hardware
from zerotui.core.launcher import (DEFAULT_TIMEOUT_MINUTES, collective_timeout, gpu_choice_problem,
                                   launcher_env, worker_argv)
from zerotui.core.plan import Plan
from zerotui.core.rank_records import (describe_wait_status, failure_cause, proc_state, read_records,
                                       record_end, record_start)
from zerotui.core.runs import RunPaths, pid_alive, read_status
from zerotui.core.supervisor import decide

needs_deepspeed = pytest.mark.skipif(
    not any((Path(p) / "deepspeed").is_dir() for p in sys.path if p), reason="deepspeed is not installed")


# -- fast: the pieces ---------------------------------------------------------------------------------

def gpus(n: int) -> Hardware:
    return Hardware(gpus=[GpuInfo(i, "H200", 141 << 30, 141 << 30, (9, 0), True) for i in range(n)])


def test_several_processes_run_under_the_supervisor_and_one_does_not(tmp_path):
    one = worker_argv(Plan(), tmp_path, gpus(1), python="py")
    assert one == ["py", "-m", "zerotui.core.worker", str(tmp_path)]
    two = worker_argv(Plan(gpus=2), tmp_path, Hardware(), python="py", resume=True)
    cut = two.index("--")
    assert two[:cut] == ["py", "-m", "zerotui.core.supervisor", str(tmp_path), "--local-ranks", "2"]
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
    from zerotui.core.launch import preflight

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
    sys.path.insert(0, str(Path(__file__).parent))
    from nvml_fake import H100, fake

    from zerotui.core.gpu_release import gpu_memory_held

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


HELPER = Path(__file__).with_name("worker_helpers.py")  # the real worker around a small real training loop


def helper_run(root: Path, **plan) -> RunPaths:
    from zerotui.core.runs import new_run_dir

    paths = new_run_dir(root, "w")
    paths.plan.write_text(Plan(name="w", model="tiny", data="sample", **plan).to_yaml())
    return paths


def test_rank0_leaves_the_end_to_a_live_supervisor_and_writes_it_without_one(tmp_path):
    env = dict(os.environ, ZEROTUI_TELEMETRY_S="0", PYTHONUNBUFFERED="1")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for supervisor, expect_end in ((os.getpid(), False), (gone.pid, True)):
        paths = helper_run(tmp_path / str(supervisor), max_steps=5)
        with open(paths.log, "ab") as log:
            rc = subprocess.run([sys.executable, str(HELPER), str(paths.root)], stdout=log, stderr=subprocess.STDOUT,
                                env={**env, "ZEROTUI_SUPERVISOR_PID": str(supervisor)}, timeout=120).returncode
        assert rc == 0
        finished = evs(paths, "run_finished")
        rec = read_records(paths.root)[0]
        assert rec["state"] == "completed" and rec["step"] == 5 and rec["pid"] != os.getpid()
        if expect_end:  # the supervisor is gone: rank 0 ends the stream itself, as a single worker does
            assert len(finished) == 1 and read_status(paths)["state"] == "completed"
        else:
            assert finished == [] and read_status(paths)["state"] == "stopping"
            assert read_status(paths)["pid"] == supervisor


def test_supervisor_writes_the_one_run_finished_after_its_child_exits(tmp_path):
    paths = helper_run(tmp_path, max_steps=5)
    env = dict(os.environ, ZEROTUI_TELEMETRY_S="0", PYTHONUNBUFFERED="1")
    with open(paths.log, "ab") as log:
        sup = subprocess.run([sys.executable, "-m", "zerotui.core.supervisor", str(paths.root), "--",
                              sys.executable, str(HELPER), str(paths.root)], stdout=log, stderr=subprocess.STDOUT,
                             env=env, timeout=120)
    assert sup.returncode == 0, paths.log.read_text()[-2000:]
    finished = evs(paths, "run_finished")
    assert len(finished) == 1 and finished[0]["state"] == "completed" and finished[0]["step"] == 5
    st = read_status(paths)
    assert st["state"] == "completed" and st["gpu_release"]["checked"] is False
    assert "zerotui supervisor: run completed" in paths.log.read_text()
    assert subprocess.run([sys.executable, "-m", "zerotui.core.supervisor", str(paths.root)],
                          capture_output=True).returncode == 2  # no command: a usage line, no traceback


# -- slow: real runs through the launcher -------------------------------------------------------------

@pytest.fixture
def tmp_path():
    """A private temporary folder (pytest's shared basetemp can be pruned by other sessions mid-run)."""
    with tempfile.TemporaryDirectory(prefix="zerotui-mp-") as d:
        yield Path(d)


@pytest.fixture(scope="module")
def cache():
    """One tokenised-data cache for the module's runs (rank 0 tokenises once, the rest read it)."""
    with tempfile.TemporaryDirectory(prefix="zerotui-mp-cache-") as d:
        yield d


@pytest.fixture
def start(tmp_path):
    """``start(plan, hardware)`` → RunPaths via the real ``start_run``; whatever the test's outcome, no
    process of the runs it started is left behind (a failed test must not leave ranks training)."""
    import psutil

    from zerotui.core.launch import start_run

    started: list[RunPaths] = []

    def go(plan: Plan, hardware: Hardware) -> RunPaths:
        paths = start_run(plan, hardware=hardware)
        started.append(paths)
        return paths

    yield go
    for paths in started:
        pids = run_pids(paths)
        for pid in list(pids):
            try:
                pids |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
            except psutil.Error:
                pass
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def cpu_ranks(cache, monkeypatch):
    """Two CPU ranks need a machine without GPUs (``gpus: 2`` would mean two GPUs elsewhere)."""
    from zerotui.core.hardware import detect

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


def evs(paths: RunPaths, type_: str | None = None) -> list[dict]:
    return [e for e in read_all(paths.events) if type_ is None or e["type"] == type_]


def wait_until(cond, timeout: float, what: str, paths: RunPaths) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{paths.log.read_text()[-4000:]}")


def run_pids(paths: RunPaths) -> set[int]:
    """Every pid of the run that anything recorded: status.json (supervisor, launcher, ranks) and the
    ranks' own records."""
    st = read_status(paths)
    pids = set(st.get("pids") or []) | {st.get("pid")}
    pids |= {rec["pid"] for rec in read_records(paths.root).values()}
    return {int(p) for p in pids if p}


def ended(paths: RunPaths, timeout: float = 600) -> dict:
    """The run's one run_finished, once it and every process of the run are gone; checks the stream."""
    wait_until(lambda: bool(evs(paths, "run_finished")), timeout, "run_finished", paths)
    pids = run_pids(paths)
    wait_until(lambda: not any(pid_alive(p) for p in pids), 30, f"every process of the run to exit {pids}", paths)
    stream = evs(paths)
    assert [p for e in stream for p in validate(e)] == []
    finished = [e for e in stream if e["type"] == "run_finished"]
    assert len(finished) == 1 and stream[-1] is finished[0], "exactly one run_finished, the last event"
    return finished[0]


def rank_pid(paths: RunPaths, rank: int) -> int:
    wait_until(lambda: rank in read_records(paths.root), 120, f"rank {rank}'s record", paths)
    return int(read_records(paths.root)[rank]["pid"])


@needs_deepspeed
@pytest.mark.slow
@pytest.mark.parametrize("stage", [2, 3])
def test_two_cpu_ranks_train_through_the_launcher(tmp_path, cpu_ranks, start, stage):
    t0 = time.monotonic()
    paths = start(mp_plan(tmp_path, stage=stage, save_interval=12), cpu_ranks)
    end = ended(paths)
    took = time.monotonic() - t0
    assert end["state"] == "completed", end
    started = evs(paths, "run_started")
    assert len(started) == 1 and started[0]["world_size"] == 2
    steps = [e["step"] for e in evs(paths, "step")]
    assert steps == [4, 8, 12, 16, 20, 24], "one event stream: every logged step once"
    losses = [e["loss"] for e in evs(paths, "step")]
    assert losses[-1] < losses[0] - 0.5, losses  # it learns (6.6 -> about 5 in these runs)
    assert [c["step"] for c in evs(paths, "checkpoint")] == [12, 24]
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
    assert "deepspeed.launcher.runner --num_gpus 2" in log and "zerotui.core.supervisor" in log
    for rank in (0, 1):
        line = next(ln for ln in log.splitlines() if ln.startswith(f"zerotui worker rank {rank} ("))
        assert "NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1" in line
    # status.json: the final state and every pid (supervisor, runner, launch, both ranks), all gone.
    st = read_status(paths)
    assert st["state"] == "completed" and {records[0]["pid"], records[1]["pid"]} <= set(st["pids"])
    assert len(st["pids"]) >= 5 and st["pid"] in st["pids"]
    assert end["pids"] == st["pids"] and end["world_size"] == 2 and end["rank"] is None
    assert not end["gpu_release"]["checked"] and "skipped" in end["gpu_release"]["note"]  # no NVML here
    telemetry = evs(paths, "telemetry")
    assert telemetry and all(t["gpus"] == [] for t in telemetry)  # rank 0 samples, no GPU on a CPU box
    last = evs(paths, "step")[-1]
    print(f"\nZeRO-{stage}, 2 CPU ranks: loss {losses[0]:.3f} -> {losses[-1]:.3f} over 24 steps, "
          f"{last['tokens_per_s']:.0f} tokens/s, step {last['step_time']:.3f} s; start to all exited {took:.1f} s")


@needs_deepspeed
@pytest.mark.slow
def test_graceful_stop_ends_every_process_with_a_checkpoint(tmp_path, cpu_ranks, start):
    paths = start(mp_plan(tmp_path, max_steps=2000, log_interval=2), cpu_ranks)
    wait_until(lambda: len(evs(paths, "step")) >= 2, 300, "step 4", paths)
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
    checkpoints = evs(paths, "checkpoint")
    assert [c["step"] for c in checkpoints] == [end["step"]]
    assert (paths.checkpoints / f"step{end['step']}" / "zerotui_rng_rank1.pt").exists()  # rank 1 saved too
    assert not any(pid_alive(p) for p in during | run_pids(paths))
    st = read_status(paths)
    assert st["state"] == "stopped" and "skipped" in st["gpu_release"]["note"]  # no NVML on a CPU machine
    print(f"\ngraceful stop of 2 CPU ranks: `zerotui stop --wait` returned after {took:.1f} s "
          f"(checkpoint at step {end['step']}, {len(during)} processes all exited)")


@needs_deepspeed
@pytest.mark.slow
def test_killing_rank_1_fails_the_run_naming_it(tmp_path, cpu_ranks, start):
    paths = start(mp_plan(tmp_path, max_steps=2000, log_interval=2), cpu_ranks)
    wait_until(lambda: bool(evs(paths, "step")), 300, "the first step", paths)
    during = run_pids(paths)
    victim = rank_pid(paths, 1)
    killed_at = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    end = ended(paths, timeout=120)
    took = time.monotonic() - killed_at
    assert end["state"] == "failed" and end["rank"] == 1
    assert end["reason"].startswith(f"rank 1 (pid {victim}) died without reporting why: killed by SIGKILL"), end
    alerts = [a for a in evs(paths, "alert") if a["kind"] == "rank"]
    assert len(alerts) == 1 and alerts[0]["rank"] == 1
    assert took < 60, f"the failure took {took:.0f} s to be reported"
    assert not any(pid_alive(p) for p in during | run_pids(paths))
    st = read_status(paths)
    assert st["state"] == "failed" and st["rank"] == 1
    print(f"\nkill -9 of rank 1: run_finished (failed, rank 1) and every process gone {took:.1f} s later")


@needs_deepspeed
@pytest.mark.slow
def test_an_exception_on_rank_1_fails_the_run_with_its_reason(tmp_path, cpu_ranks, start, monkeypatch):
    # Fault injection at the process boundary: a sitecustomize that only rank 1 acts on (RANK=1) makes
    # its 6th optimizer step raise; everything else is the real run.
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os\n"
        "if os.environ.get('RANK') == '1':\n"
        "    from zerotui.core import loop\n"
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
    assert max(e["step"] for e in evs(paths, "step")) == 5
    records = read_records(paths.root)
    assert records[1]["cause"] == "error" and records[0]["state"] == "failed" and records[0]["cause"] == "peer"


@needs_deepspeed
@pytest.mark.slow
def test_a_hung_rank_ends_the_run_after_the_collective_timeout(tmp_path, cpu_ranks, start, monkeypatch):
    monkeypatch.setenv("DEEPSPEED_TIMEOUT", "1")  # minutes; the default is 10
    paths = start(mp_plan(tmp_path, max_steps=2000, log_interval=2), cpu_ranks)
    wait_until(lambda: bool(evs(paths, "step")), 300, "the first step", paths)
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
