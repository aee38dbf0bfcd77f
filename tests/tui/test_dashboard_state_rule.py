"""The dashboard shows the state `zerotui runs` prints, through a run's whole life across a resume: both
end in ``core.run.settled.settled_state`` (status.json settled by the stream's run_finished)."""
from __future__ import annotations

import os
import time

from dashboard_helpers import DashApp, _dead_pid, last_t, loaded, make_run, pilot_test, wait_for
from zerotui.cli.commands.runs import run_record
from zerotui.core.atomic import atomic_write_json
from zerotui.core.events.stream import EventWriter
from zerotui.core.run.folder import list_runs

WIDE = (160, 48)


def _runs_state(tmp_path) -> str:
    """What `zerotui runs` prints in its state column for the one run under tmp_path."""
    (summary,) = list_runs(tmp_path)
    return run_record(summary, time.time())["state"]


def _status(paths, state: str, launched: float, pid: int | None = None) -> None:
    pid = pid or os.getpid()
    atomic_write_json(paths.status, {"state": state, "launched": launched, "heartbeat": time.time(),
                                     "pid": pid, "pids": [pid]}, fsync=False)


def _append(paths, *events: dict) -> None:
    with EventWriter(paths.events) as w:
        for ev in events:
            w.write({"v": 1, "t": time.time(), **ev})


async def _both_say(pilot, screen, tmp_path, state: str) -> None:
    await wait_for(pilot, lambda: screen.outcome == state, what=f"the dashboard to say {state}")
    assert _runs_state(tmp_path) == state, f"the dashboard says {state}, `zerotui runs` does not"


@pilot_test
async def test_the_dashboard_and_zerotui_runs_agree_across_a_resume(tmp_path):
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={})
    t = last_t(paths)
    _status(paths, "stopped", launched=t - 80)
    async with DashApp(paths, clock=time.time).run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await _both_say(pilot, screen, tmp_path, "stopped")
        launched = time.time()
        _status(paths, "starting", launched)  # `zerotui resume`: the old run_finished is still the last event
        await _both_say(pilot, screen, tmp_path, "starting")
        _append(paths, {"type": "run_started", "plan": {}, "hardware": {}, "world_size": 1, "total_steps": 120})
        _status(paths, "running", launched)
        await _both_say(pilot, screen, tmp_path, "running")
        _append(paths, {"type": "run_finished", "state": "completed", "reason": "done", "step": 120})
        _status(paths, "completed", launched)
        await _both_say(pilot, screen, tmp_path, "completed")


@pilot_test
async def test_a_supervisor_killed_after_run_finished_leaves_the_run_finished_for_both(tmp_path):
    # The supervisor wrote run_finished, then died before its final status.json: status still says
    # running, for a pid that is gone. `zerotui runs` said "lost", the dashboard "stopped".
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={})
    _status(paths, "running", launched=last_t(paths) - 80, pid=_dead_pid())
    async with DashApp(paths, clock=time.time).run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await _both_say(pilot, screen, tmp_path, "stopped")


@pilot_test
async def test_a_resumed_worker_that_died_before_its_first_event_is_lost_for_both(tmp_path):
    # Launched again after the old end, then gone: the old "stopped" no longer describes the run.
    paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={})
    _status(paths, "starting", launched=time.time(), pid=_dead_pid())
    async with DashApp(paths, clock=time.time).run_test(size=WIDE) as pilot:
        screen = await loaded(pilot)
        await _both_say(pilot, screen, tmp_path, "lost")
