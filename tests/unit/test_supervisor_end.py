"""The supervisor at a run's end: on a disk that has just filled, the end is said in its log and it exits
with the run's code instead of a traceback (which left status.json "running"); a worker that died
without recording its end is ended with its last alert, which often named the cause."""
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


def test_a_worker_that_died_silently_after_an_alert_is_ended_with_that_alert(tmp_path):
    # A full disk at the first save: the worker's alert got out, its own end (rank record, status) did
    # not, and the end read "died without reporting why" with the cause one line above it.
    from zerotui.core.events.stream import EventWriter
    from zerotui.core.run.settled import last_alert_note
    from run_events import events

    paths = new_run_dir(tmp_path, "silent")
    paths.plan.write_text(Plan(name="silent", model="tiny", data="sample").to_yaml())
    write_status(paths, state="running", step=75)
    with EventWriter(paths.events) as w:
        w.emit("alert", kind="disk", message="an alert of an earlier session", hint="")
        w.emit("run_started", plan={}, hardware={}, world_size=1, total_steps=100)
        w.emit("alert", kind="disk", message="checkpoint at step 75 could not be written: the disk is full",
               hint="free space")
        w.emit("log", message="a line after it")
    sup = sup_mod.Supervisor(paths, ["true"], direct=True)
    sup.deaths = {0: {"pid": 4242, "at": 1.0, "status": 1 << 8}}  # exited with code 1, recording nothing
    assert sup._conclude() == 1
    reason = events(paths, "run_finished")[0]["reason"]
    assert "died without reporting why" in reason
    assert reason.endswith("its last alert: checkpoint at step 75 could not be written: the disk is full")
    # only the current session's alerts count
    fresh = new_run_dir(tmp_path, "fresh")
    with EventWriter(fresh.events) as w:
        w.emit("alert", kind="disk", message="old", hint="")
        w.emit("run_started", plan={}, hardware={}, world_size=1, total_steps=1)
    assert last_alert_note(fresh.events) == []
