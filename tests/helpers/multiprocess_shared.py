"""Helpers of the several-process tests (tests/unit/test_multiprocess.py, tests/deepspeed/test_cpu_ranks.py).
"""
from __future__ import annotations

import os
import signal

import pytest

from zerotui.core.hardware.types import Hardware
from zerotui.core.plan.schema import Plan
from zerotui.core.run.rank_records import (read_records)
from zerotui.core.run.folder import RunPaths, pid_alive, read_status


@pytest.fixture
def start(tmp_path):
    """``start(plan, hardware)`` → RunPaths via the real ``start_run``; whatever the test's outcome, no
    process of the runs it started is left behind (a failed test must not leave ranks training)."""
    import psutil

    from zerotui.core.run.start import start_run

    started: list[RunPaths] = []

    def go(plan: Plan, hardware: Hardware) -> RunPaths:
        paths = start_run(plan, hardware=hardware)
        started.append(paths)
        return paths

    yield go
    for paths in started:
        pids = run_pids(paths)
        for pid in list(pids):
            try:
                pids |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
            except psutil.Error:
                pass
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


def run_pids(paths: RunPaths) -> set[int]:
    """Every pid of the run that anything recorded: status.json (supervisor, launcher, ranks) and the
    ranks' own records."""
    st = read_status(paths)
    pids = set(st.get("pids") or []) | {st.get("pid")}
    pids |= {rec["pid"] for rec in read_records(paths.root).values()}
    return {int(p) for p in pids if p}
