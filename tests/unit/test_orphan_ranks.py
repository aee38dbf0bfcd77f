"""The end of a several-rank run whose supervisor was killed (core/run/orphan_end.py). Rank 0 recorded it
alone: a run whose rank 0 was then killed too (the OOM killer; DeepSpeed's launcher then ends the other
ranks) was left with no end and read as "lost", and rank 0's own end named the peer it lost rather than
the rank that failed first. Now any rank that ends with neither the supervisor nor rank 0 left records
it, decided from every rank's record, and only once."""
from __future__ import annotations

import json
import os
import subprocess
import time

from run_events import events

from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import new_run_dir, read_status, run_state, write_status
from zerotui.core.run.orphan_end import ORPHAN_NOTE, record_orphan_end
from zerotui.core.run.rank_records import read_records, record_end, record_path, record_start


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def two_ranks(tmp_path, rank0_pid: int, name: str = "mp"):
    """A two-rank run folder mid-run: rank 0's heartbeat, its step events, both ranks' start records."""
    paths = new_run_dir(tmp_path, name)
    with EventWriter(paths.events) as w:
        w.emit("run_started", plan={}, hardware={}, world_size=2, total_steps=100, start_step=0)
        for n, loss in ((4, 6.5), (8, 6.1)):
            w.emit("step", step=n, epoch=0.1, loss=loss, lr=1e-3, grad_norm=1.0, loss_scale=None, skipped=0,
                   samples_per_s=1.0, tokens_per_s=100.0 * n, tflops=None, step_time=0.1)
    write_status(paths, state="running", pid=rank0_pid, pids=[rank0_pid], step=9, loss=9.9, tokens_per_s=1.0)
    for rank, pid in ((0, rank0_pid), (1, os.getpid())):  # rank 1: this process, the one ending
        rec = record_start(paths.root, rank)
        record_path(paths.root, rank).write_text(json.dumps({**rec, "pid": pid, "world_size": 2}))
    return paths


def end_rank(paths, rank: int, state: str, reason: str, cause: str = "", step: int = 9) -> None:
    record_end(paths.root, rank, read_records(paths.root)[rank], state, reason, cause, step)


def test_rank_1_records_the_end_when_the_supervisor_and_rank_0_are_gone(tmp_path):
    rank0 = dead_pid()
    paths = two_ranks(tmp_path, rank0)
    end_rank(paths, 1, "failed", "Connection closed by peer", "peer")
    assert record_orphan_end(paths, dead_pid(), "failed", "Connection closed by peer", 9, rank=1)
    finished = events(paths, "run_finished")
    assert len(finished) == 1 and events(paths)[-1]["type"] == "run_finished"
    end = finished[0]
    assert end["state"] == "failed" and end["rank"] == 0 and end["world_size"] == 2 and end["step"] == 9
    assert f"rank 0 (pid {rank0}) died without reporting why" in end["reason"] and ORPHAN_NOTE in end["reason"]
    assert "rank 1 then failed too (peer)" in end["reason"]
    st = read_status(paths)
    assert st["state"] == "failed" and st["reason"] == end["reason"] and st["rank"] == 0
    assert (st["step"], st["loss"], st["tokens_per_s"]) == (8, 6.1, 800.0)  # the newest step report's
    assert run_state(paths) == "failed"
    # a third rank ending just after, or rank 0's end arriving late: no second end
    assert not record_orphan_end(paths, dead_pid(), "failed", "peer", 9, rank=2)
    assert not record_orphan_end(paths, dead_pid(), "failed", "peer", 9, rank=0)
    assert len(events(paths, "run_finished")) == 1


def test_rank_1_leaves_the_end_to_a_rank_0_still_running(tmp_path):
    paths = two_ranks(tmp_path, os.getpid())  # rank 0: alive
    end_rank(paths, 1, "completed", "reached the last step")
    assert not record_orphan_end(paths, dead_pid(), "completed", "reached the last step", 100, rank=1)
    assert not events(paths, "run_finished") and read_status(paths)["state"] == "running"


def test_rank_1_waits_for_rank_0_when_it_has_no_record_yet(tmp_path):
    paths = two_ranks(tmp_path, dead_pid())
    record_path(paths.root, 0).unlink()  # rank 0 still importing: it will write events yet
    assert not record_orphan_end(paths, dead_pid(), "failed", "peer", 0, rank=1)
    assert not events(paths, "run_finished")


def test_rank_0_names_the_rank_that_failed_first(tmp_path):
    paths = two_ranks(tmp_path, os.getpid())
    end_rank(paths, 1, "failed", "ValueError: bad batch", "error")
    end_rank(paths, 0, "failed", "Connection closed by peer", "peer")
    assert record_orphan_end(paths, dead_pid(), "failed", "Connection closed by peer", 9)
    end = events(paths, "run_finished")[0]
    assert end["rank"] == 1 and end["reason"].startswith("rank 1 failed: ValueError: bad batch")
    assert not record_orphan_end(paths, dead_pid(), "failed", "Connection closed by peer", 9)  # once
    assert len(events(paths, "run_finished")) == 1


def test_an_earlier_attempts_end_does_not_stand_for_this_one(tmp_path):
    # A resume whose ranks failed before rank 0 said run_started: the stream's tail still ends with the
    # previous attempt's run_finished, which must not be taken for this attempt's.
    rank0 = dead_pid()
    paths = two_ranks(tmp_path, rank0)
    with EventWriter(paths.events) as w:
        w.emit("run_finished", state="stopped", reason="stop requested", step=8)
    later = time.time() + 5
    for rank in (0, 1):
        f = record_path(paths.root, rank)
        f.write_text(json.dumps({**json.loads(f.read_text()), "started": later}))
    end_rank(paths, 1, "failed", "Connection closed by peer", "peer")
    assert record_orphan_end(paths, dead_pid(), "failed", "Connection closed by peer", 8, rank=1)
    assert [e["state"] for e in events(paths, "run_finished")] == ["stopped", "failed"]
