"""The estimator sweep's one-process-per-row mode (benchmarks/estimator/worker.py, ``sweep.py --fresh``):
a measuring child reports how it ended, and a failing child never runs on inside the parent's code."""
from __future__ import annotations

from places import REPO
import json
import os
import signal
import sys

sys.path.insert(0, str(REPO))

from benchmarks.estimator.worker import _child, _fork_each  # noqa: E402


def test_a_forked_child_reports_its_exit_code_a_failure_and_a_signal():
    assert _child(lambda: 0) == 0
    assert _child(lambda: 3) == 3
    assert _child(lambda: None) == 1  # not an int: counted as a failure, never os._exit(None)
    assert _child(lambda: 1 / 0) == 1
    assert _child(lambda: os.kill(os.getpid(), signal.SIGKILL)) == -signal.SIGKILL


def test_a_child_that_fails_never_returns_into_the_parents_code(tmp_path):
    marker = tmp_path / "ran-on"

    def fails() -> int:
        os.environ["ZT_FORK_CHILD"] = "1"  # in the child only
        raise RuntimeError("boom")

    _child(fails)
    # had the child escaped _child it would go on here, with the variable set, and write the marker
    # before the parent's wait returns
    if os.environ.get("ZT_FORK_CHILD"):
        marker.write_text("escaped")
    assert not marker.exists()


def test_rows_that_die_unwritten_get_crash_rows_and_three_in_a_row_end_the_batch(tmp_path, monkeypatch):
    import benchmarks.estimator.worker as worker

    monkeypatch.setattr(worker, "_setup", lambda device: os._exit(7))  # every child dies before its row
    results, current = tmp_path / "results.jsonl", tmp_path / "current.json"
    results.write_text("")
    configs = [{"id": f"c{i}", "shape": "dry-a", "plan": {}} for i in range(5)]
    assert _fork_each({"device": "cpu", "configs": configs}, results, current) == 0
    rows = [json.loads(x) for x in results.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["c0", "c1", "c2"]
    assert all(r["status"] == "crash" and "exit code 7" in r["error"] for r in rows)
    assert json.loads(current.read_text()) == {"id": None}
