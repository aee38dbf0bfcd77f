"""Spares (core/run/spare.py): the claim between a launch and a waiting supervisor, with real processes,
the real FIFO and lock, and a small stand-in for the worker that records the claim it is handed (the real
worker, importing torch and DeepSpeed for real, is in tests/deepspeed/test_spare_runs.py)."""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from zerotui.core.run import spare as sp
from zerotui.core.run import spare_claim
from zerotui.core.run.folder import RunPaths, new_run_dir, pid_alive, write_status
from zerotui.core.run.rank_records import read_records
from zerotui.core.plan.schema import plan_from_dict

#: The worker's stand-in: finds its spare folder in its supervisor's command line, says it is ready,
#: and writes the claim it gets into the run folder (what the real worker would start on).
FAKE_WORKER = r"""
import json, os, pathlib, sys
argv = pathlib.Path(f"/proc/{os.getppid()}/cmdline").read_bytes().split(b"\0")
folder = pathlib.Path(argv[argv.index(b"--spare") + 1].decode())
(folder / "ready").touch()
line = sys.stdin.readline()
if line:
    claim = json.loads(line)
    ranks = pathlib.Path(claim["run"], "ranks")
    held = sorted(p.name for p in ranks.glob("*.json"))  # what the run folder held when the worker heard
    ranks.mkdir(exist_ok=True)
    (ranks / "rank-0.json").write_text(json.dumps({"rank": 0, "pid": os.getpid()}))  # as record_start does
    # written whole then renamed: the test reads it as soon as the name exists
    tmp = pathlib.Path(claim["run"], "claim-seen.json.tmp")
    tmp.write_text(json.dumps({**claim, "pid": os.getpid(), "ranks_held": held}))
    tmp.rename(tmp.with_suffix(""))
"""


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(sp.SPARE_ENV, raising=False)
    yield
    for spare in sp.list_spares():
        spare_claim.end_spare(spare)


def _start(**env) -> sp.Spare:
    base = dict(os.environ, **env)
    spare = sp.start_spare(base, worker=[sys.executable, "-c", FAKE_WORKER])
    assert spare is not None
    assert sp.wait_ready(spare, 30), (spare.folder / sp.LOG).read_text()
    return spare


def _launching(tmp_path: Path, name: str = "run") -> tuple[RunPaths, float]:
    """A run folder as a launch leaves it just before it hands the run over: plan written, "starting"."""
    paths = new_run_dir(tmp_path / "runs", name)
    paths.plan.write_text("name: t\n")
    launched = time.time()
    write_status(paths, state="starting", launched=launched, heartbeat=launched)
    return paths, launched


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid) or "zerotui" not in sp.cmdline(pid):
            return True
        time.sleep(0.05)
    return False


def _claimed(paths: RunPaths, timeout: float = 10) -> dict:
    seen = paths.root / "claim-seen.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not seen.exists():
        time.sleep(0.05)
    return json.loads(seen.read_text())


def test_a_launch_hands_its_run_to_the_spare_which_passes_it_to_its_worker(tmp_path, monkeypatch):
    spare = _start()
    worker = sp.read_spare(spare.folder).worker
    paths, launched = _launching(tmp_path)
    monkeypatch.chdir(tmp_path)
    pid = spare_claim.claim(paths.root, sp.worker_env(), resume=True, launched=launched)
    assert pid == spare.supervisor
    seen = _claimed(paths)
    assert seen["run"] == str(paths.root) and seen["resume"] is True and seen["cwd"] == str(tmp_path)
    assert seen["pid"] == worker
    assert not spare.folder.exists() and sp.list_spares() == []
    # The supervisor moved its output into the run's log and named the run it took
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "takes run" not in paths.log.read_text(errors="replace"):
        time.sleep(0.05)
    assert f"takes run {paths.root}" in paths.log.read_text()


def test_a_run_handed_to_a_spare_still_importing_stays_starting_while_it_is_silent(tmp_path, monkeypatch):
    """Claimed before its worker finished importing (a quick launch on a slow machine): nobody writes a
    heartbeat until the worker starts. That is a start on its way, not a lost run to resume beside it."""
    from zerotui.core.run import folder
    from zerotui.core.run.start import _note_pid

    monkeypatch.setattr(folder, "LOST_AFTER_S", 0.5)  # silent for "30 s" without waiting them out
    slow = FAKE_WORKER.replace("line = sys.stdin.readline()", "import time; time.sleep(3)\nline = sys.stdin.readline()")
    spare = sp.start_spare(dict(os.environ), worker=[sys.executable, "-c", slow])
    assert spare is not None and sp.wait_ready(spare, 30)
    paths, launched = _launching(tmp_path)
    pid = spare_claim.claim(paths.root, sp.worker_env(), resume=False, launched=launched)
    assert pid == spare.supervisor
    _note_pid(paths, pid, launched)  # what the launch does next
    time.sleep(1.0)
    assert not (paths.root / "claim-seen.json").exists()  # the worker has not heard of the run yet
    assert folder.run_state(paths) == "starting"
    assert _claimed(paths)["run"] == str(paths.root)


def test_a_previous_attempts_rank_records_go_before_the_worker_writes_its_own(tmp_path):
    """Resuming through a spare: the old attempt's records are cleared before the worker hears of the run
    (clearing after would delete the record the worker writes at once)."""
    spare = _start()
    worker = sp.read_spare(spare.folder).worker
    paths, launched = _launching(tmp_path)
    (paths.root / "ranks").mkdir()
    (paths.root / "ranks" / "rank-0.json").write_text(json.dumps({"rank": 0, "pid": 1}))
    spare_claim.claim(paths.root, sp.worker_env(), resume=True, launched=launched)
    assert _claimed(paths)["ranks_held"] == []
    assert _gone(spare.supervisor)  # the supervisor has run to its end over the finished worker
    assert read_records(paths.root)[0]["pid"] == worker


def test_a_spare_of_another_environment_is_left_alone(tmp_path):
    spare = _start(ZEROTUI_TEST_OTHER="1")
    paths, launched = _launching(tmp_path)
    assert spare_claim.claim(paths.root, sp.worker_env(), resume=False, launched=launched) is None
    assert [s.supervisor for s in sp.list_spares()] == [spare.supervisor]
    assert not (paths.root / "claim-seen.json").exists()


def test_variables_of_the_terminal_session_do_not_change_the_key_but_library_settings_do():
    env = sp.worker_env({"PATH": "/usr/bin", "HOME": "/h"})
    assert sp.env_key({**env, "SSH_CONNECTION": "1.2.3.4 5 6.7.8.9 22", "TERM": "xterm", "COLUMNS": "80"}) \
        == sp.env_key(env)
    assert sp.env_key({**env, "PYTHONPATH": "/elsewhere"}) != sp.env_key(env)
    assert sp.env_key({**env, "CUDA_VISIBLE_DEVICES": "1"}) != sp.env_key(env)
    assert sp.env_key(env, python="/other/python") != sp.env_key(env)


def test_a_killed_spare_is_skipped_and_its_folder_removed(tmp_path):
    spare = _start()
    os.killpg(spare.supervisor, signal.SIGKILL)
    assert _gone(spare.supervisor)
    paths, launched = _launching(tmp_path)
    started = time.monotonic()
    assert spare_claim.claim(paths.root, sp.worker_env(), resume=False, launched=launched) is None
    assert time.monotonic() - started < 2  # no wait for an answer from a spare that is gone
    assert not spare.folder.exists()


def test_a_spare_whose_code_changed_refuses_and_ends(tmp_path):
    spare = _start()
    info = json.loads((spare.folder / sp.INFO).read_text())
    (spare.folder / sp.INFO).write_text(json.dumps({**info, "code": "imported before an upgrade"}))
    paths, launched = _launching(tmp_path)
    notes: list[str] = []
    assert spare_claim.claim(paths.root, sp.worker_env(), resume=False, launched=launched, note=notes.append) is None
    assert _gone(spare.supervisor) and not spare.folder.exists()
    assert not (paths.root / "claim-seen.json").exists()
    assert len(notes) == 1 and "zerotui or one of its libraries changed since this spare started" in notes[0]


def test_a_claim_for_a_run_not_being_launched_is_refused(tmp_path):
    spare = _start()
    paths, launched = _launching(tmp_path)
    # another launch time than the one status.json holds: not this launch's run
    notes: list[str] = []
    assert spare_claim.claim(paths.root, sp.worker_env(), resume=False, launched=launched - 60, note=notes.append) is None
    assert _gone(spare.supervisor) and not (paths.root / "claim-seen.json").exists()
    assert f"run {paths.name} is not being launched now" in notes[0]


def test_a_spare_another_launch_is_talking_to_is_skipped(tmp_path):
    spare = _start()
    fd = sp.try_lock(spare.folder)
    assert fd is not None
    try:
        paths, launched = _launching(tmp_path)
        assert spare_claim.claim(paths.root, sp.worker_env(), resume=False, launched=launched) is None
        assert sp.list_spares()[0].supervisor == spare.supervisor
    finally:
        os.close(fd)


def test_two_launches_at_once_get_one_spare_between_them(tmp_path):
    _start()
    runs = [_launching(tmp_path, f"r{i}") for i in range(2)]
    got: list = [None, None]

    def launch(i: int) -> None:
        got[i] = spare_claim.claim(runs[i][0].root, sp.worker_env(), resume=False, launched=runs[i][1])

    threads = [threading.Thread(target=launch, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(p is None for p in got) == [False, True]
    taken = runs[got.index(next(p for p in got if p))][0]
    assert _claimed(taken)["run"] == str(taken.root)


def test_garbage_in_the_fifo_ends_the_spare_without_a_hang(tmp_path):
    spare = _start()
    fd = os.open(spare.folder / sp.FIFO, os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"\x00\xff not json\n")
    os.close(fd)
    assert _gone(spare.supervisor)
    assert json.loads((spare.folder / sp.ACK).read_text())["why"] == "not a claim (unreadable JSON)"
    assert sp.list_spares() == [] and not spare.folder.exists()  # the next listing clears what it left


def test_an_unclaimed_spare_ends_itself_and_a_signal_ends_one(tmp_path):
    idle = _start(**{sp.IDLE_ENV: "1"})
    stopped = _start()
    assert idle.supervisor != stopped.supervisor  # two environments: two spares
    assert _gone(idle.supervisor, 15) and not idle.folder.exists()
    assert [s.supervisor for s in sp.stop_spares()] == [stopped.supervisor]
    assert _gone(stopped.supervisor) and not stopped.folder.exists()


def test_one_spare_per_environment(tmp_path):
    first = _start()
    again = sp.start_spare(worker=[sys.executable, "-c", FAKE_WORKER])
    assert again is not None and again.supervisor == first.supervisor
    assert len(sp.list_spares()) == 1


def test_tampered_spare_folders_are_ignored_without_blocking(tmp_path):
    base = sp._private_dir()
    fifo_info = base / "spare-fifo"
    fifo_info.mkdir()
    os.mkfifo(fifo_info / sp.INFO)
    linked = base / "spare-link"
    linked.mkdir()
    (tmp_path / "elsewhere.json").write_text(json.dumps({"supervisor": os.getpid(), "worker": 1, "key": "k",
                                                          "started": 0}))
    (linked / sp.INFO).symlink_to(tmp_path / "elsewhere.json")
    pid_reused = base / "spare-reused"
    pid_reused.mkdir()  # a live pid that is not this folder's supervisor (this test process)
    (pid_reused / sp.INFO).write_text(json.dumps({"supervisor": os.getpid(), "worker": 1, "key": "k", "started": 0}))
    started = time.monotonic()
    assert sp.list_spares() == []
    assert time.monotonic() - started < 2
    paths, launched = _launching(tmp_path)
    assert spare_claim.claim(paths.root, sp.worker_env(), resume=False, launched=launched) is None


def test_spares_off_or_plans_they_cannot_serve():
    assert sp.start_spare({**os.environ, sp.SPARE_ENV: "0"}) is None
    assert spare_claim.claimable({}, several_processes=False)  # any method: the spare's allocator is every plan's
    assert spare_claim.claimable({"PYTORCH_CUDA_ALLOC_CONF": ""}, several_processes=False)  # the user's choice
    assert not spare_claim.claimable({}, several_processes=True)
    assert not spare_claim.claimable({sp.SPARE_ENV: "0"}, several_processes=False)


def test_a_spare_being_claimed_is_not_stopped_and_an_idle_one_is(tmp_path):
    """`zerotui spare stop` and a sweep's end stop a spare only under its lock: one that a launch is talking
    to may be the supervisor of a run a moment later, and a SIGTERM would stop that run."""
    spare = _start()
    fd = sp.try_lock(spare.folder)  # a launch talking to it
    assert fd is not None
    try:
        assert sp.stop_spare(spare) is False and sp.stop_spares() == []
        assert pid_alive(spare.supervisor)
    finally:
        os.close(fd)
    assert sp.stop_spare(spare) is True and _gone(spare.supervisor)
    assert sp.stop_spare(spare) is False  # gone: nothing to signal (its pid may be someone else's by now)


def test_a_sweep_keeps_a_spare_only_for_trials_one_can_serve(tmp_path, monkeypatch):
    from zerotui.core.sweep.slots import Slot, pin
    from zerotui.core.sweep.spares import SweepSpare

    said: list[str] = []
    plan = plan_from_dict({"name": "p", "model": "tiny", "data": "sample", "max_steps": 4}, "t")
    on_gpus = SweepSpare(gpu_count=2, log=said.append)
    assert not on_gpus.serves(pin(plan, Slot(1, gpu=1), parallel=2))  # DeepSpeed's launcher pins it
    assert not on_gpus.serves(plan.with_changes(gpus=2))  # two ranks
    on_gpus.keep_ready(pin(plan, Slot(1, gpu=1), parallel=2))
    assert sp.list_spares() == [] and on_gpus.started is None
    assert SweepSpare(gpu_count=1).serves(plan)  # one trial at a time on one GPU
    assert not SweepSpare(gpu_count=0).serves(plan)  # trials on the CPU: the spare's imports would slow them
    monkeypatch.setenv(sp.SPARE_ENV, "1")  # ... unless asked for outright
    on_cpu = SweepSpare(gpu_count=0, log=said.append)
    assert on_cpu.serves(pin(plan, Slot(0), parallel=2)) and on_cpu.serves(plan)
    on_cpu.keep_ready(plan)
    started = on_cpu.started
    on_cpu.keep_ready(plan)  # at once, before the first is listed: still no second
    assert started is not None and len(said) == 1
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not sp.list_spares():
        time.sleep(0.05)
    assert [s.supervisor for s in sp.list_spares()] == [started.supervisor]
    on_cpu.close()
    assert _gone(started.supervisor, timeout=30) and sp.list_spares() == [] and "ended with the sweep" in said[-1]


def test_a_sweep_ending_at_once_still_ends_the_spare_it_started(tmp_path, monkeypatch):
    monkeypatch.setenv(sp.SPARE_ENV, "1")
    from zerotui.core.sweep.spares import SweepSpare

    plan = plan_from_dict({"name": "p", "model": "tiny", "data": "sample", "max_steps": 4}, "t")
    keeper = SweepSpare(gpu_count=0, log=lambda _line: None)
    keeper.keep_ready(plan)
    started = keeper.started
    assert started is not None
    keeper.close()  # before the spare has listed itself
    assert _gone(started.supervisor, timeout=30) and sp.list_spares() == []


def test_a_sweep_uses_a_spare_already_up_and_leaves_it_to_whoever_started_it(tmp_path, monkeypatch):
    from zerotui.core.sweep.spares import SweepSpare

    monkeypatch.setenv(sp.SPARE_ENV, "1")
    wizards = _start()  # e.g. the wizard's, started as it opened
    keeper = SweepSpare(gpu_count=0, log=lambda _line: None)
    keeper.keep_ready(plan_from_dict({"name": "p", "model": "tiny", "data": "sample", "max_steps": 4}, "t"))
    assert keeper.started is None and [s.supervisor for s in sp.list_spares()] == [wizards.supervisor]
    keeper.close()
    assert pid_alive(wizards.supervisor) and [s.supervisor for s in sp.list_spares()] == [wizards.supervisor]
