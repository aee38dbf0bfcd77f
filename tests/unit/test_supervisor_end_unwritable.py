"""The supervisor's last writes on a disk that has just filled: the run's end is said in its log, and
the supervisor exits with the run's code instead of a traceback (which left status.json "running")."""
from __future__ import annotations

import errno

from zerotui.core.plan.schema import Plan
from zerotui.core.run import supervisor as sup_mod
from zerotui.core.run.folder import new_run_dir, read_status, write_status


def test_an_end_that_cannot_be_written_is_logged_not_raised(tmp_path, monkeypatch, capsys):
    paths = new_run_dir(tmp_path, "full")
    paths.plan.write_text(Plan(name="full", model="tiny", data="sample").to_yaml())
    write_status(paths, state="running", step=75)

    class FullDisk:
        def __init__(self, *a, **k):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sup_mod, "EventWriter", FullDisk)
    rc = sup_mod.Supervisor(paths, ["true"], direct=True)._conclude()
    assert rc == 1  # no rank recorded an end: failed
    err = capsys.readouterr().err
    assert f"could not record the end in {paths.root} (No space left on device); run failed" in err
    assert read_status(paths)["state"] == "running"  # nothing half-written either
