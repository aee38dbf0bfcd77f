"""A sweep folder whose files were damaged or replaced: sweep.json or status.json a FIFO, a link to a
device, the wrong types; study.db not a database, a folder or a FIFO; status.json naming a pid that another
process has since taken. Each ends as one RunError line naming the file (or, for the advisory status, as
no status, or a dead driver) — never a hang, a memory blow-up, a traceback or a signal to a stranger."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from zerotui.core.errors import RunError
from zerotui.core.plan.schema import Plan
from zerotui.core.sweep.folder import SweepPaths, driver_alive, read_spec, read_status, write_spec, write_status
from zerotui.core.sweep.report import summary
from zerotui.core.sweep.space import Param


@pytest.fixture
def no_hang():
    """Fail (instead of hanging the suite) when a read blocks for more than 5 s."""
    def _alarm(*_):
        pytest.fail("blocked on the FIFO for 5 s")  # a BaseException: no `except OSError` swallows it
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _sweep(tmp_path, **spec) -> SweepPaths:
    paths = SweepPaths(tmp_path / "sweeps" / "20261201-120000-p")
    paths.root.mkdir(parents=True)
    write_spec(paths, {"plan": Plan(name="p", max_steps=8).to_dict(), "trials": 3, "parallel": 1, "seed": 0,
                       "runs_dir": str(tmp_path), "space": [Param("lr", 1e-4, 1e-3, log=True).to_dict()], **spec})
    return paths


def test_sweep_json_fifo_is_refused_unread(tmp_path, no_hang):
    paths = _sweep(tmp_path)
    paths.spec.unlink()
    os.mkfifo(paths.spec)
    with pytest.raises(RunError, match="FIFO"):
        read_spec(paths)


def test_sweep_json_link_to_a_device_is_refused_unread(tmp_path):
    paths = _sweep(tmp_path)
    paths.spec.unlink()
    paths.spec.symlink_to("/dev/null")  # (/dev/zero was read until memory ran out; /dev/null is safe to try)
    with pytest.raises(RunError, match="symlink"):
        read_spec(paths)


def test_status_json_fifo_reads_as_no_status(tmp_path, no_hang):
    paths = _sweep(tmp_path)
    os.mkfifo(paths.status)
    assert read_status(paths) == {}


@pytest.mark.parametrize("field, value", [("trials", "abc"), ("trials", 0), ("parallel", "2"), ("plan", 5),
                                          ("space", [{"nm": 1}]), ("space", "lr"), ("runs_dir", 3)])
def test_sweep_json_field_of_wrong_type_is_named(tmp_path, field, value):
    paths = _sweep(tmp_path, **{field: value})
    with pytest.raises(RunError) as err:
        read_spec(paths)
    assert f"field '{field}'" in err.value.message and str(paths.spec) in err.value.message


def test_resume_json_of_a_damaged_spec_is_one_line(tmp_path):
    from zerotui.cli.commands.sweep import _what_starts

    with pytest.raises(RunError, match="field 'trials'"):
        _what_starts(_sweep(tmp_path, trials="abc"), resumed=True)


def test_show_of_a_study_db_that_is_not_a_database_is_one_line(tmp_path):
    paths = _sweep(tmp_path)
    paths.db.write_bytes(b"garbage, not SQLite\n" * 10)
    with pytest.raises(RunError, match="cannot read its study"):
        summary(paths)


def test_a_study_db_that_is_a_folder_is_one_line_naming_it_not_0_trials(tmp_path):
    paths = _sweep(tmp_path)
    paths.db.mkdir()
    with pytest.raises(RunError) as err:
        summary(paths)
    assert err.value.exit_code == 2
    assert f"its study {paths.db} is a folder" in err.value.message
    assert f"`zerotui sweep --resume {paths.name}` then starts the search anew" in err.value.hint


def test_a_study_db_that_is_a_fifo_is_refused_unopened(tmp_path, no_hang):
    paths = _sweep(tmp_path)
    os.mkfifo(paths.db)
    with pytest.raises(RunError, match="not a regular file"):
        summary(paths)


def test_show_and_resume_of_a_study_db_folder_exit_2_in_one_line(tmp_path, zerotui_cli):
    paths = _sweep(tmp_path)
    paths.db.mkdir()
    for option in ("--show", "--resume"):
        r = zerotui_cli("sweep", option, str(paths.root))
        assert r.returncode == 2 and r.stdout == "", (option, r.stdout, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and f"{paths.db} is a folder" in r.stderr, (option, r.stderr)
    assert not paths.log.exists()  # no driver was started


def test_a_pid_another_process_took_since_does_not_make_a_dead_sweep_alive(tmp_path, zerotui_cli):
    """The driver died (a reboot, kill -9) and its number went to a later process: the sweep is not
    running, `--resume` is not refused, and `--stop` does not signal that stranger."""
    paths = _sweep(tmp_path)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        write_status(paths, pid=stranger.pid, heartbeat=time.time() - 3600, state="running")
        assert not driver_alive(paths)
        assert summary(paths)["state"] == "lost"
        r = zerotui_cli("sweep", "--stop", str(paths.root))
        assert r.returncode == 2 and "is not running" in r.stderr, r.stderr
        assert stranger.poll() is None
        write_status(paths, pid=stranger.pid, heartbeat=time.time(), state="running")  # it wrote this one
        assert driver_alive(paths)
    finally:
        stranger.kill()
        stranger.wait()


def test_good_spec_still_reads(tmp_path):
    assert read_spec(_sweep(tmp_path))["trials"] == 3
    assert json.loads(_sweep(tmp_path / "b").spec.read_text())["parallel"] == 1


def test_runs_dir_that_is_a_file_names_it_and_writes_nothing(tmp_path):
    from zerotui.core.sweep.start import prepare_sweep

    a_file = tmp_path / "runs"
    a_file.write_text("x")
    with pytest.raises(RunError, match="--runs-dir") as err:
        prepare_sweep(Plan(name="p", max_steps=2, eval_fraction=0.1), "lr=1e-4..1e-3", 2, a_file)
    assert "is a file" in err.value.message and a_file.read_text() == "x"
