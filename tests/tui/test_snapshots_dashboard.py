"""Snapshots (pytest-textual-snapshot) of the dashboard at 80×24, 120×40, 160×48 and 200×50, from the recorded event files.

Deterministic: fixed event times, the clock frozen 10 s after the last event (elapsed, ETA and "ago"
read it), the time zone pinned to UTC, and the charts drawn before the picture is taken. Regenerate
after an intended change with ``pytest tests/tui/test_snapshots_dashboard.py --snapshot-update`` and look
at the report before committing.
"""
from __future__ import annotations

import pytest

from dashboard_helpers import DashApp, loaded, make_run, utc  # noqa: F401 (utc: fixture)
from snapshot_helpers import steady_frame

CASES = {
    "live_80x24": ("live.jsonl", (80, 24), {}),
    "live_160x48": ("live.jsonl", (160, 48), {}),
    "live_200x50": ("live.jsonl", (200, 50), {}),
    "live_120x40": ("live.jsonl", (120, 40), {}),
    "failed_160x48": ("failed.jsonl", (160, 48), {"status": {"state": "failed", "heartbeat": 1.0}}),
    "finished_120x40": ("finished.jsonl", (120, 40), {"status": {"state": "completed", "heartbeat": 1.0}}),
    "finished_200x50": ("finished.jsonl", (200, 50), {"status": {"state": "completed", "heartbeat": 1.0}}),
    "startup_80x24": ("startup.jsonl", (80, 24), {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_dashboard_snapshot(snap_compare, tmp_path, case):
    fixture, size, kwargs = CASES[case]
    app = DashApp(make_run(tmp_path, fixture, **kwargs))

    async def run_before(pilot) -> None:
        await loaded(pilot)
        await steady_frame(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
