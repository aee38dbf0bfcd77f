"""Starting a run (core/run/start.py): what preflight refuses before anything is written, and resume's
locking, with no DeepSpeed engine started.
"""
from __future__ import annotations

import os
import signal
import time

import pytest

from zerotui.core.errors import HardwareError, PlanError, RunError
from zerotui.core.hardware.detect import detect
from zerotui.core.run.start import resume_run, start_run
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths, read_status

from launch_shared import tiny_plan, finished, _alive  # noqa: F401
from run_events import wait_until


def test_unwritable_runs_dir_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(HardwareError, match="runs folder .* is not writable"):
        start_run(tiny_plan(tmp_path, runs_dir=str(blocker / "runs")), hardware=detect(probe_disks=False))


def test_unwritable_nvme_path_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    plan = tiny_plan(tmp_path, stage=3, offload_optimizer="nvme", nvme_path=str(blocker / "swap"))
    # under a file: the file is named (mkdir's own word was a bare "Not a directory")
    with pytest.raises(HardwareError, match=f"NVMe offload folder {blocker}/swap lies under {blocker}, which is a "
                                            "file, not a folder"):
        start_run(plan, hardware=detect(probe_disks=False))
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    # A parent that does not exist (a mistyped mount point) is not made: the swap would land on "/"'s disk
    with pytest.raises(HardwareError, match=r"/mnt-typo/swap cannot be made: .*/mnt-typo does not exist"):
        start_run(plan.with_changes(nvme_path=str(tmp_path / "mnt-typo" / "swap")), hardware=detect(probe_disks=False))
    assert not (tmp_path / "mnt-typo").exists()
    # The file itself given as the folder: said as such, not as a permissions problem
    with pytest.raises(HardwareError, match=f"NVMe offload folder {blocker} is a file, not a folder"):
        start_run(plan.with_changes(nvme_path=str(blocker)), hardware=detect(probe_disks=False))
    assert blocker.read_text() == ""


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
    from zerotui.core.hardware.detect import stated_hardware

    small = stated_hardware(ram="64MiB", base=detect(probe_disks=False))
    with pytest.raises(HardwareError) as err:
        start_run(tiny_plan(tmp_path), hardware=small)
    assert "the plan does not fit this machine: host RAM" in err.value.message
    # 64 MiB less the system's reserve (a quarter of so small a machine)
    assert "of 48.0 MiB (too much)" in err.value.message and "--force" in err.value.hint
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

    from zerotui.core.run.folder import new_run_dir, write_status

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
