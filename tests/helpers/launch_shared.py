"""Helpers of the launch tests (tests/unit/test_launch.py, tests/deepspeed/test_detached_runs.py).
"""
from __future__ import annotations

from pathlib import Path


from zerotui.core.events.stream import validate
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import RunPaths, read_status
from run_events import events, wait_until



def tiny_plan(tmp_path: Path, **fields) -> Plan:
    base = dict(name="tiny", model="tiny", data="sample", precision="bf16", stage=2, micro_batch=2,
                seq_len=64, max_steps=40, log_interval=1, save_interval=10, save_minutes=0,
                eval_fraction=0.0, save_final=False, runs_dir=str(tmp_path / "runs"), lr=1e-3,
                max_samples=400)
    base.update(fields)
    return Plan(**base)


def finished(paths: RunPaths, timeout: float = 300) -> dict:
    wait_until(lambda: bool(events(paths, "run_finished")), timeout, "run_finished", paths)
    wait_until(lambda: not _alive(read_status(paths).get("pid")), 30, "the worker to exit", paths)
    all_events = events(paths)
    for e in all_events:
        assert validate(e) == [], e
    return events(paths, "run_finished")[-1]


def _alive(pid) -> bool:
    from zerotui.core.run.folder import pid_alive

    return pid_alive(pid) if pid else False
