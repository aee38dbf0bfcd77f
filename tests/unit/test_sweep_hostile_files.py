"""A sweep folder whose files were damaged or replaced: sweep.json or status.json a FIFO, a link to a
device, the wrong types; study.db not a database. Each ends as one RunError line naming the file (or, for
the advisory status, as no status) — never a hang, a memory blow-up or a traceback."""
from __future__ import annotations

import json
import os
import signal

import pytest
from zerotui.core.errors import RunError
from zerotui.core.plan.schema import Plan
from zerotui.core.sweep.folder import SweepPaths, read_spec, read_status, write_spec
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
