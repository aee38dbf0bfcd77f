"""The seed harness's host figures (benchmarks/seed_scenarios/run.py ``measure``): the run's RSS before
and from the end's checkpoint save, and the same less resident file pages (telemetry's ``rss_file``),
from a run folder's events as the worker writes them."""
from __future__ import annotations

import sys

from places import REPO

sys.path.insert(0, str(REPO))

from benchmarks.seed_scenarios.run import measure  # noqa: E402

from zerotui.core.events.stream import EventWriter  # noqa: E402

GIB = 2**30


def _tele(w: EventWriter, t: float, rss: int, rss_file=None) -> None:
    w.emit("telemetry", t=t, gpus=[], cpu_percent=1.0, ram_used=40 * GIB, ram_total=64 * GIB, rss=rss,
           **({} if rss_file is None else {"rss_file": rss_file}))


def test_host_figures_split_at_the_save_and_leave_out_file_pages(tmp_path):
    with EventWriter(tmp_path / "events.jsonl") as w:
        _tele(w, 1.0, 20 * GIB, 12 * GIB)   # loading: the model's mapped file is most of RSS
        _tele(w, 2.0, 10 * GIB, 1 * GIB)    # training: 9 GiB of its own
        w.emit("phase", t=3.0, name="saving checkpoint", done=0, total=1)
        _tele(w, 4.0, 14 * GIB, 2 * GIB)    # saving
        w.emit("run_finished", t=5.0, state="completed", reason="done")
    m = measure(tmp_path, 0.0)
    assert m["host_rss_max_training"] == 20 * GIB and m["host_rss_max_saving"] == 14 * GIB
    assert m["host_rss_own_max_training"] == 9 * GIB      # 20 - 12 = 8 < 10 - 1 = 9
    assert m["host_rss_own_max_saving"] == 12 * GIB


def test_without_file_pages_recorded_the_split_is_unknown_not_zero(tmp_path):
    # runs before telemetry had rss_file: no anonymous figure rather than a wrong one
    with EventWriter(tmp_path / "events.jsonl") as w:
        _tele(w, 1.0, 20 * GIB)
        w.emit("run_finished", t=5.0, state="completed", reason="done")
    m = measure(tmp_path, 0.0)
    assert m["host_rss_max_training"] == 20 * GIB
    assert m["host_rss_own_max_training"] is None and m["host_rss_own_max_saving"] is None
