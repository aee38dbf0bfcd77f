"""Spare workers (core/run/spare.py) with the real worker: it imports torch, DeepSpeed and transformers
ahead, then trains a new run and a resume through ``start_run`` / ``resume_run`` — the same supervisor,
status, events and stop as a cold start, and the process that trained is the one that imported ahead."""
from __future__ import annotations

import pytest

from launch_shared import finished, tiny_plan
from run_events import events, wait_until
from zerotui.core.hardware.detect import detect
from zerotui.core.run import spare as sp
from zerotui.core.run import spare_claim
from zerotui.core.run.folder import pid_alive, read_status, send_control
from zerotui.core.run.rank_records import read_records
from zerotui.core.run.start import resume_run, start_run


@pytest.fixture(autouse=True)
def _own_spares(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))  # spares of this test only
    monkeypatch.delenv(sp.SPARE_ENV, raising=False)
    yield
    for spare in sp.list_spares():
        spare_claim.end_spare(spare)


def _ready_spare() -> tuple[sp.Spare, int]:
    spare = sp.start_spare()
    assert spare is not None
    assert sp.wait_ready(spare, 300), (spare.folder / sp.LOG).read_text()
    info = sp.read_spare(spare.folder)
    assert info is not None
    return spare, info.worker


def test_a_spare_trains_a_new_run_and_another_spare_resumes_it(tmp_path):
    hardware = detect(probe_disks=False)
    spare, worker = _ready_spare()
    paths = start_run(tiny_plan(tmp_path, max_steps=400, save_interval=0), hardware=hardware)
    assert read_status(paths)["pid"] == spare.supervisor  # the spare's supervisor is the run's
    wait_until(lambda: len(events(paths, "step")) >= 3, 240, "step 3", paths)
    assert read_records(paths.root)[0]["pid"] == worker  # trained by the process that imported ahead
    send_control(paths, "stop", by="test")
    end = finished(paths)
    assert end["state"] == "stopped" and spare.supervisor in end["pids"] and worker in end["pids"]
    stopped_at = end["step"]
    log = paths.log.read_text()
    assert f"takes run {paths.root}" in log and "libraries imported in" in log  # the spare's start-up, carried

    again, worker2 = _ready_spare()
    resume_run(paths, hardware=hardware)
    assert read_status(paths)["pid"] == again.supervisor
    wait_until(lambda: any(e["step"] > stopped_at + 1 for e in events(paths, "step")), 240, "steps after resume",
               paths)
    started = events(paths, "run_started")[-1]
    assert started["start_step"] == stopped_at  # --resume reached the spare's worker
    send_control(paths, "stop", by="test")
    assert finished(paths)["state"] == "stopped"
    assert read_records(paths.root)[0]["pid"] == worker2
    assert sp.list_spares() == []  # both were used up


def test_the_spare_command_starts_lists_and_stops_one(tmp_path, monkeypatch):
    """`zerotui spare` as a script uses it: start and wait for the real worker's imports, list, stop."""
    import json
    import os
    import subprocess
    import sys
    import time

    def zerotui(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "zerotui.cli.main", "spare", *argv], capture_output=True,
                              text=True, env=dict(os.environ), timeout=400, check=False)

    bad = zerotui("start", "--wait", "-1")
    assert bad.returncode == 2 and "--wait -1" in bad.stderr and "Traceback" not in bad.stderr
    started = zerotui("start", "--wait", "300", "--json")
    assert started.returncode == 0, started.stderr
    up = json.loads(started.stdout)
    assert up["ready"] is True and up["worker"] > 0
    again = json.loads(zerotui("start", "--json").stdout)  # one per environment: the same spare answers
    assert again["supervisor"] == up["supervisor"]
    listed = json.loads(zerotui("list", "--json").stdout)
    assert [(s["supervisor"], s["ready"]) for s in listed] == [(up["supervisor"], True)]
    stopped = json.loads(zerotui("stop", "--json").stdout)
    assert [s["supervisor"] for s in stopped["stopped"]] == [up["supervisor"]]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and sp.list_spares():
        time.sleep(0.2)
    assert sp.list_spares() == [] and "no spare is up" in zerotui("list").stdout
    while time.monotonic() < deadline and pid_alive(up["worker"]):
        time.sleep(0.2)
    assert not pid_alive(up["worker"])  # its worker ended with it
