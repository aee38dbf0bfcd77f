"""End to end on CPU: a real detached run of the tiny model, watched, detached from, re-attached to and
stopped gracefully from the dashboard, through the real App (``ZeroTuiApp(attach=paths)``, what
``zerotui attach`` opens) and the real worker, DeepSpeed and control.jsonl."""
from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from dashboard_helpers import pilot_test, text_of, utc, wait_for  # noqa: F401 (utc: fixture)
from zerotui.core.events.stream import read_all
from zerotui.core.run.folder import pid_alive, read_status, run_state
from zerotui.tui.common.confirm import ConfirmScreen
from zerotui.tui.dashboard.screen import DashboardScreen



@pytest.fixture
def private_tmp():
    # pytest's shared basetemp keeps only 3 sessions; other sessions here may remove it mid-run.
    with tempfile.TemporaryDirectory(prefix="zerotui-dash-e2e-") as d:
        yield Path(d)


async def _dashboard(pilot, timeout: float = 60.0) -> DashboardScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, DashboardScreen)
                   and pilot.app.screen.history is not None, timeout, "the dashboard")
    return pilot.app.screen


@pilot_test
async def test_launch_watch_detach_attach_and_stop(private_tmp):
    from zerotui.core.hardware.detect import detect
    from zerotui.core.run.start import start_run
    from zerotui.core.plan.presets import load_preset
    from zerotui.tui.app import ZeroTuiApp

    plan = load_preset("tiny-cpu-demo").with_changes(name="e2e", max_steps=20000, log_interval=5,
                                                     save_interval=0, eval_fraction=0.0, save_final=False,
                                                     runs_dir=str(private_tmp / "runs"))
    paths = start_run(plan, hardware=detect(probe_disks=False))
    group = _run_group(paths)
    try:
        app = ZeroTuiApp(attach=paths)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _dashboard(pilot)
            # start-up phases first, then step events arrive and the charts and stats follow them
            # generous: DeepSpeed may JIT-build its CPU ops first (minutes on a busy 2-core machine)
            await wait_for(pilot, lambda: (screen.history.current_step or 0) >= 10, 600, "step 10")
            await wait_for(pilot, lambda: "running" in text_of(screen.query_one("#dash-status")), 10, "running")
            assert screen.history.phases
            first_seen = screen.history.current_step
            await pilot.press("d")  # detach: the UI quits
        pid = read_status(paths)["pid"]
        assert pid_alive(pid) and run_state(paths) == "running"  # the run goes on without a UI
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and max(
                (e["step"] for e in read_all(paths.events) if e["type"] == "step"), default=0) < first_seen + 10:
            time.sleep(0.2)

        app = ZeroTuiApp(attach=paths)  # `zerotui attach` again
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _dashboard(pilot)
            h = screen.history
            steps = [e["step"] for e in read_all(paths.events) if e["type"] == "step"]
            assert h.current_step >= first_seen + 10
            # the whole history, no gap: every step event since the start is in the series
            assert h.series["loss"].count >= len(steps) - 5 and steps[:3] == [5, 10, 15]
            assert h.series["loss"].count == h.step_events
            await pilot.press("s")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: screen.outcome == "stopped", 300, "the graceful stop")
            await pilot.pause(0.3)
            assert "Run stopped" in text_of(screen.query_one("#dash-banner"))
            assert "stop acknowledged" in " ".join(str(x.text) for x in screen.query_one("#pane-log").lines)
        done = [e for e in read_all(paths.events) if e["type"] == "run_finished"]
        assert done and done[-1]["state"] == "stopped"
        assert [e for e in read_all(paths.events) if e["type"] == "checkpoint"]  # graceful: checkpoint first
    finally:
        _end_the_whole_run(paths, group)


def _run_group(paths) -> int:
    """The run's process group: ``start_run`` starts the supervisor in a session of its own, and the
    worker (with any helper it starts) stays in it, so the group outlives a supervisor killed first."""
    pid = read_status(paths)["pid"]
    group = os.getpgid(pid)
    assert group == pid != os.getpgrp()  # never this test's own group
    return group


def _group_members(group: int) -> list[int]:
    import psutil

    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == group:
                members.append(proc.pid)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


def _run_processes(paths, group: int) -> set[int]:
    """Every process of the run still running: status.json's pids, their descendants, and the group's."""
    import psutil

    st = read_status(paths)
    pids = {int(p) for p in [st.get("pid"), *(st.get("pids") or [])] if p}
    for pid in list(pids):
        try:
            pids |= {c.pid for c in psutil.Process(pid).children(recursive=True)}
        except psutil.Error:
            pass
    return {p for p in pids | set(_group_members(group)) if pid_alive(p)}


def _end_the_whole_run(paths, group: int, grace_s: float = 60.0) -> None:
    """Whatever the test's outcome, no process of the run outlives it. Killing the supervisor alone left
    its worker training on (a worker whose supervisor is gone finishes the run itself, orphan_end.py):
    the run is stopped as a user stops it (`zerotui stop --now`, through control.jsonl), then whatever is
    left of it is killed."""
    from zerotui.core.run.folder import send_control

    if run_state(paths) in ("starting", "running", "paused", "stopping"):
        send_control(paths, "stop-now", by="test cleanup")
    deadline = time.monotonic() + grace_s
    while _run_processes(paths, group) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _run_processes(paths, group)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if left:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while _run_processes(paths, group) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _run_processes(paths, group), "processes of the run outlived the test"
