"""A sweep's folder: ``RUNS/sweeps/<date-time>-<name>/`` with

    sweep.json    what was asked: the base plan, the space, the trial count, the runs folder (written once)
    study.db      Optuna's study (SQLite): every trial, its values, its reported eval losses and state
    status.json   the driver's pid, heartbeat and state (running | completed | failed | stopped)
    driver.log    the driver's output

The trials themselves are ordinary runs in the runs folder, named ``<sweep>-t<N>``: `zerotui runs`,
`attach` and `resume` work on them as on any run.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from zerotui.core.atomic import atomic_write_json
from zerotui.core.errors import RunError

STUDY = "study"  # the Optuna study's name inside study.db


@dataclass(frozen=True)
class SweepPaths:
    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def spec(self) -> Path:
        return self.root / "sweep.json"

    @property
    def db(self) -> Path:
        return self.root / "study.db"

    @property
    def status(self) -> Path:
        return self.root / "status.json"

    @property
    def log(self) -> Path:
        return self.root / "driver.log"

    @property
    def storage(self) -> str:
        return f"sqlite:///{self.db}"


def sweeps_dir(runs_dir: Path) -> Path:
    return Path(runs_dir) / "sweeps"


def new_sweep_dir(runs_dir: Path, name: str) -> SweepPaths:
    base = sweeps_dir(runs_dir)
    base.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(100):
        root = base / (f"{stamp}-{name}" if n == 0 else f"{stamp}-{name}-{n}")
        try:
            root.mkdir()
            return SweepPaths(root)
        except FileExistsError:
            continue
    raise RunError(f"cannot make a sweep folder under {base}", "remove old sweeps or choose another --name")


def write_spec(paths: SweepPaths, spec: dict[str, Any]) -> None:
    atomic_write_json(paths.spec, spec)


def read_spec(paths: SweepPaths) -> dict[str, Any]:
    try:
        data = json.loads(paths.spec.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RunError(f"{paths.spec}: not a readable sweep description ({err})",
                       "`zerotui sweep --list` shows the sweeps") from None
    if not isinstance(data, dict) or not {"plan", "space", "trials", "runs_dir"} <= set(data):
        raise RunError(f"{paths.spec}: not a zerotui sweep", "`zerotui sweep --list` shows the sweeps")
    return data


def write_status(paths: SweepPaths, **fields: Any) -> None:
    try:
        atomic_write_json(paths.status, {"pid": os.getpid(), "heartbeat": time.time(), **fields})
    except OSError:
        pass  # the heartbeat is advisory: a full disk must not stop the sweep between trials


def read_status(paths: SweepPaths) -> dict[str, Any]:
    try:
        data = json.loads(paths.status.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def driver_alive(paths: SweepPaths) -> bool:
    pid = read_status(paths).get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:  # a zombie (its parent has not waited) is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def find_sweep(runs_dir: Path, name: Optional[str]) -> SweepPaths:
    """A sweep by folder, name or unique part of a name (newest when ``name`` is None)."""
    if name and Path(name).is_dir() and (Path(name) / "sweep.json").exists():
        return SweepPaths(Path(name))
    base = sweeps_dir(runs_dir)
    found = sorted((p for p in base.iterdir() if (p / "sweep.json").exists()), key=lambda p: p.name) \
        if base.is_dir() else []
    if name:
        found = [p for p in found if name in p.name]
    if not found:
        raise RunError(f"no sweep{' matching ' + repr(name) if name else ''} under {base}",
                       "start one with `zerotui sweep PLAN --trials N --space ...`")
    if name and len(found) > 1 and not any(p.name == name for p in found):
        raise RunError(f"{name!r} matches {len(found)} sweeps: {', '.join(p.name for p in found[:4])}",
                       "give more of the name")
    return SweepPaths(next((p for p in found if p.name == name), found[-1]))
