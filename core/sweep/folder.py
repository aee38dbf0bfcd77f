"""A sweep's folder: ``RUNS/sweeps/<date-time>-<name>/`` with

    sweep.json    what was asked: the base plan, the space, the trial count, the runs folder (written once)
    study.db      Optuna's study (SQLite): every trial, its values, its reported eval losses and state
    status.json   the driver's pid, heartbeat and state (running | completed | failed | stopped)
    driver.log    the driver's output

The trials themselves are ordinary runs in the runs folder, named ``<sweep>-t<N>``: `zerotui runs`,
`attach` and `resume` work on them as on any run.
"""
from __future__ import annotations

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
    try:
        base.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # the runs folder, or a folder above it, is a file
        raise RunError(f"cannot make the sweep's folder {base}: the runs folder {runs_dir} or a folder above it "
                       "is a file", "give --runs-dir a folder, or a path where one can be made") from None
    except PermissionError:
        raise RunError(f"cannot make the sweep's folder {base}: permission denied",
                       "give --runs-dir a folder you can write") from None
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


def _bad_spec(paths: SweepPaths, why: str) -> RunError:
    return RunError(f"{paths.spec}: {why}", "the sweep folder is damaged: move it aside and start "
                    "the sweep again")


def read_spec(paths: SweepPaths) -> dict[str, Any]:
    """sweep.json, checked: a FIFO, a device or a huge file is refused unread, and a field of the wrong
    type is named here (not as a KeyError or ValueError deep in --resume or --show)."""
    from zerotui.core.safe_read import RUN_FILE_BYTES, describe, load_json, read_text

    try:
        data = load_json(read_text(paths.spec, RUN_FILE_BYTES, follow=False))
    except (OSError, UnicodeDecodeError) as err:
        raise _bad_spec(paths, f"not a readable sweep description ({describe(err)})") from None
    except ValueError as err:
        raise _bad_spec(paths, f"not a readable sweep description ({err})") from None
    if not isinstance(data, dict) or not {"plan", "space", "trials", "runs_dir"} <= set(data):
        raise _bad_spec(paths, "not a zerotui sweep (it needs plan, space, trials and runs_dir)")
    checks = [("plan", isinstance(data["plan"], dict), "a mapping"),
              ("space", isinstance(data["space"], list) and bool(data["space"]) and all(
                  isinstance(p, dict) and isinstance(p.get("name"), str) for p in data["space"]),
               "a list of parameters, each with a name"),
              ("trials", _whole(data["trials"], 1), "a whole number of at least 1"),
              ("runs_dir", isinstance(data["runs_dir"], str) and bool(data["runs_dir"]), "a folder path"),
              ("parallel", _whole(data.get("parallel", 1), 1), "a whole number of at least 1")]
    for key, ok, want in checks:
        if not ok:
            raise _bad_spec(paths, f"field '{key}' must be {want} (got {data.get(key)!r:.60})")
    return data


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def write_status(paths: SweepPaths, **fields: Any) -> None:
    try:
        atomic_write_json(paths.status, {"pid": os.getpid(), "heartbeat": time.time(), **fields})
    except OSError:
        pass  # the heartbeat is advisory: a full disk must not stop the sweep between trials


def read_status(paths: SweepPaths) -> dict[str, Any]:
    from zerotui.core.safe_read import RUN_FILE_BYTES, load_json, read_text

    try:  # never blocks: a FIFO or device in the status's place reads as no status
        data = load_json(read_text(paths.status, RUN_FILE_BYTES, follow=False))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
        return {}


def driver_alive(paths: SweepPaths) -> bool:
    """Whether the driver that wrote status.json still runs. Its pid alone is not enough: after a reboot or
    a long time the number may belong to another process, which would make a dead sweep look alive (and
    refuse `--resume`). The run code's check applies: a process started after the status's heartbeat is
    not the one that wrote it (``live_pids``)."""
    from zerotui.core.run.folder import live_pids

    st = read_status(paths)
    pid = st.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    beat = st.get("heartbeat")
    return bool(live_pids({"pid": pid, "heartbeat": beat if isinstance(beat, (int, float)) else 0}))


def study_exists(paths: SweepPaths) -> bool:
    """Whether the sweep has its study.db yet; RunError when something other than a file holds its place:
    SQLite would take a folder for no study at all (0 trials) and block on a FIFO. ``stat``, not an open:
    closing a descriptor of a database this process has open would drop SQLite's locks on it."""
    import stat

    try:
        mode = os.stat(paths.db).st_mode
    except FileNotFoundError:
        return False
    except OSError as err:
        raise RunError(f"sweep {paths.name}: cannot read its study {paths.db} ({err.strerror or err})",
                       "check the sweep folder's permissions") from None
    if stat.S_ISREG(mode):
        return True
    kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, a device or a socket)"
    raise RunError(f"sweep {paths.name}: its study {paths.db} is {kind}, not the SQLite file the sweep writes",
                   f"move it aside; `zerotui sweep --resume {paths.name}` then starts the search anew in "
                   "this folder (the trials already run stay in the runs folder)")


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
