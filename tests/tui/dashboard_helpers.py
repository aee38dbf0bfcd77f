"""Run folders made from the recorded event files, and a small App that hosts one dashboard screen."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Optional

import pytest

from zerotui.core.atomic import atomic_write_json
from zerotui.core.run.folder import RunPaths
from zerotui.tui.dashboard.navigation import RunNavigation
from zerotui.tui.dashboard.screen import DashboardScreen

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"


def last_t(paths: RunPaths) -> float:
    import json

    lines = paths.events.read_text().splitlines()
    return float(json.loads(lines[-1])["t"]) if lines else 0.0


def make_run(root: Path, fixture: str, name: str = "20260101-000000-fixture", status: Optional[dict] = None,
             alive: bool = True) -> RunPaths:
    """A run folder holding ``fixture``'s events; a status.json for a live worker (this test process's pid,
    heartbeat at the last event) unless ``status`` is given or ``alive`` is False (a dead pid: lost)."""
    paths = RunPaths(root / name)
    (paths.root / "checkpoints").mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / fixture, paths.events)
    (paths.root / "plan.yaml").write_text("name: fixture\n")
    if status is None:
        pid = os.getpid() if alive else _dead_pid()
        status = {"state": "running", "pid": pid, "pids": [pid], "heartbeat": last_t(paths), "step": 1}
    if status:
        atomic_write_json(paths.status, status, fsync=False)
    return paths


def _dead_pid() -> int:
    """A pid that is certainly not running: a child we started and reaped."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


class DashApp(RunNavigation):
    """Hosts one DashboardScreen, as ``ZeroTuiApp(attach=paths)`` does."""

    def __init__(self, paths: RunPaths, clock: Any = None, live: bool = True) -> None:
        super().__init__()
        self.paths, self.live = paths, live
        self.clock = clock or (lambda: last_t(paths) + 10.0)

    def on_mount(self) -> None:
        self.push_screen(DashboardScreen(self.paths, live=self.live, clock=self.clock, poll_s=0.05))


async def loaded(pilot, timeout: float = 10.0) -> DashboardScreen:
    """Wait until the dashboard has its history and has drawn every visible chart once."""
    screen = pilot.app.screen
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        screen = pilot.app.screen
        if isinstance(screen, DashboardScreen) and screen.history is not None:
            if not any(c.dirty and c._shown() for c in screen.charts):
                await pilot.pause(0.05)
                return screen
    raise AssertionError("the dashboard did not load its history in time")


async def wait_for(pilot, predicate, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if predicate():
            return
    raise AssertionError(f"timed out waiting for {what}")


def control_lines(paths: RunPaths) -> list[dict]:
    import json

    if not paths.control.exists():
        return []
    return [json.loads(line) for line in paths.control.read_text().splitlines() if line.strip()]


def text_of(widget) -> str:
    """What a Static shows, as plain text (its renderable may be a str, Text or a rich Table)."""
    from rich.console import Console

    with open(os.devnull, "w") as sink:
        console = Console(width=200, record=True, file=sink)
        console.print(widget.content)
    return console.export_text()


def pilot_test(fn):
    """Run an ``async def`` test with asyncio.run (no pytest-asyncio plugin needed)."""
    import asyncio
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return wrapper


def log_text(screen) -> str:
    """The dashboard's log as one string, wrapped lines joined (RichLog wraps long lines)."""
    return " ".join("".join(str(line.text) for line in screen.query_one("#pane-log").lines).split())


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    """Clock times on screen are local: pin the zone so the expected text is the same on every machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
