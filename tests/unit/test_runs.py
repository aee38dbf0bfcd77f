"""core/run/folder.py: run folders, status and liveness, control.jsonl, listing and resolving runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time


import pytest

from zerotui.core.errors import RunError
from zerotui.core.run.folder import (LOST_AFTER_S, RunPaths, list_runs, live_pids, new_run_dir, pid_alive,
                                     read_control, read_status, resolve_run, run_state, send_control, write_status)


def make(base, name="r", now=None, state=None, **status):
    paths = new_run_dir(base, name, now=now)
    paths.plan.write_text("name: r\n")
    if state:
        write_status(paths, state=state, **status)
    return paths


def test_new_run_dir_names_and_suffixes_in_the_same_second(tmp_path):
    t = time.mktime((2024, 5, 6, 7, 8, 9, 0, 0, -1))
    a = new_run_dir(tmp_path, "demo", now=t)
    b = new_run_dir(tmp_path, "demo", now=t)
    assert a.name == "20240506-070809-demo" and b.name == "20240506-070809-demo-2"
    assert a.checkpoints.is_dir() and b.checkpoints.is_dir()


def test_new_run_dir_in_unwritable_folder_is_a_run_error(tmp_path):
    if os.geteuid() == 0:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        target = blocker / "runs"  # a path under a file can never be created, even by root
    else:
        target = tmp_path / "ro"
        target.mkdir(mode=0o500)
    with pytest.raises(RunError, match="cannot create"):
        new_run_dir(target, "x")


def test_status_roundtrip_and_unreadable_status(tmp_path):
    paths = make(tmp_path, state="running", pid=os.getpid(), step=3)
    st = read_status(paths)
    assert st["step"] == 3 and st["heartbeat"] <= time.time()
    paths.status.write_text("{torn")
    assert read_status(paths) == {}


def test_run_state_live_final_and_lost(tmp_path):
    live = make(tmp_path, "live", state="running", pids=[os.getpid()])
    assert run_state(live) == "running"
    done = make(tmp_path, "done", state="completed", pid=999999999)
    assert run_state(done) == "completed"  # final states need no live process
    stale = make(tmp_path, "stale", state="running", pids=[os.getpid()], heartbeat=time.time() - LOST_AFTER_S - 5)
    assert run_state(stale) == "lost"
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = make(tmp_path, "dead", state="running", pids=[proc.pid])
    assert not pid_alive(proc.pid)
    assert run_state(dead) == "lost"


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    time.sleep(0.1)  # its start time is taken from /proc: let it exist
    yield proc
    proc.kill()
    proc.wait()


def test_a_start_that_is_silent_while_its_process_lives_is_still_starting(tmp_path, sleeper):
    # A spare claimed while it still imports: no heartbeat until its worker starts, its supervisor alive.
    beat = time.time()
    paths = make(tmp_path, "spare", state="starting", pids=[sleeper.pid], heartbeat=beat)
    later = beat + LOST_AFTER_S + 60
    assert run_state(paths, now=later) == "starting"
    running = make(tmp_path, "hung", state="running", pids=[sleeper.pid], heartbeat=beat)
    assert run_state(running, now=later) == "lost"  # silent once running: the worker's own beat stopped
    # a heartbeat from before the process existed: its number was reused (a reboot), not the run's process
    reused = make(tmp_path, "reused", state="starting", pids=[sleeper.pid], heartbeat=beat - 3600)
    assert live_pids(read_status(reused)) == []
    assert run_state(reused, now=later) == "lost"
    sleeper.kill()
    sleeper.wait()
    assert run_state(paths, now=later) == "lost"


def test_a_silent_run_whose_process_lives_is_not_resumed_beside_it(tmp_path, sleeper, monkeypatch):
    from zerotui.core.run import folder
    from zerotui.core.run.start import resume_run

    monkeypatch.setattr(folder, "LOST_AFTER_S", 0.3)
    paths = make(tmp_path, "silent", state="running", pids=[sleeper.pid], heartbeat=time.time())
    time.sleep(0.5)
    assert run_state(paths) == "lost"
    with pytest.raises(RunError, match=f"gone silent.*process {sleeper.pid} is still running") as err:
        resume_run(paths)
    assert f"kill {sleeper.pid}" in err.value.hint
    assert read_status(paths)["state"] == "running"  # nothing was written: no second worker, no new status


def test_zombie_worker_counts_as_dead(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    time.sleep(0.5)  # exited but not reaped: a zombie still answers kill(pid, 0)
    try:
        assert not pid_alive(proc.pid)
    finally:
        proc.wait()


def test_control_append_read_skips_torn_and_unknown_lines(tmp_path):
    paths = make(tmp_path)
    a = send_control(paths, "pause")
    with open(paths.control, "a") as fh:
        fh.write("not json\n")
        fh.write(json.dumps({"command": "explode"}) + "\n")
    b = send_control(paths, "stop", by="me")
    with open(paths.control, "a") as fh:
        fh.write('{"command": "stop"')  # a write in progress
    cmds, off = read_control(paths)
    assert [(c["command"], c["id"]) for c in cmds] == [("pause", a["id"]), ("stop", b["id"])]
    assert cmds[1]["by"] == "me"
    again, off2 = read_control(paths, off)
    assert again == [] and off2 == off
    with pytest.raises(RunError, match="unknown control command"):
        send_control(paths, "reboot")


def test_send_control_to_missing_run_is_a_run_error(tmp_path):
    with pytest.raises(RunError, match="no run folder"):
        send_control(RunPaths(tmp_path / "nope"), "stop")


def test_list_and_resolve(tmp_path):
    old = make(tmp_path, "alpha", now=time.time() - 100, state="stopped")
    new = make(tmp_path, "beta", now=time.time() - 50, state="completed")
    live = make(tmp_path, "gamma", now=time.time() - 200, state="running", pids=[os.getpid()])
    (tmp_path / "not-a-run").mkdir()
    names = [r.name for r in list_runs(tmp_path)]
    assert names == [new.name, old.name, live.name]  # newest first, non-runs skipped
    assert resolve_run(None, tmp_path) == live  # a live run wins when none is named
    assert resolve_run(None, tmp_path, prefer_live=False) == new
    assert resolve_run("alpha", tmp_path) == old
    assert resolve_run(str(old.root), tmp_path) == old
    with pytest.raises(RunError, match="no run named 'zeta'"):
        resolve_run("zeta", tmp_path)
    with pytest.raises(RunError, match="matches several runs"):
        resolve_run("-", tmp_path, prefer_live=False)
    assert resolve_run("-", tmp_path) == live  # several matches, one of them live: that one
    with pytest.raises(RunError, match="no runs in"):
        resolve_run(None, tmp_path / "empty")


def test_a_run_without_status_is_judged_by_its_events_not_by_writes_in_its_folder(tmp_path):
    # status.json deleted (a user following "restore or delete that file"): the run is lost once its
    # events are older than the silence rule, and stays lost when a resume's storage probe writes in the
    # folder (it was "starting" again at every resume, which refused it).
    from zerotui.core.run.storage import check_storage

    paths = make(tmp_path, "nostatus")
    paths.events.write_text('{"v": 1, "t": 1, "type": "log", "message": "x"}\n')
    old = time.time() - LOST_AFTER_S - 30
    os.utime(paths.events, (old, old))
    assert not paths.status.exists()
    assert run_state(paths) == "lost"
    check_storage(paths.root, "the run folder", "free some space")  # what resume does first
    assert time.time() - paths.root.stat().st_mtime < 5  # the probe did write in the folder
    assert run_state(paths) == "lost"
    paths.events.write_text(paths.events.read_text())  # a worker writing events: a start on its way
    assert run_state(paths) == "starting"


def test_a_folder_given_by_path_that_is_no_run_is_named_as_such(tmp_path):
    plain = tmp_path / "notrun"
    plain.mkdir()
    with pytest.raises(RunError) as err:
        resolve_run(str(plain), tmp_path / "runs")
    assert f"{plain} is not a zerotui run folder" in err.value.message  # not "no run named ... in runs/"


def test_runs_refuses_a_runs_folder_that_is_a_file(tmp_path, capsys):
    from zerotui.cli.main import main

    afile = tmp_path / "file"
    afile.write_text("x")
    assert main(["runs", "--runs-dir", str(afile)]) == 2
    assert f"the runs folder {afile} is not a folder" in capsys.readouterr().err
