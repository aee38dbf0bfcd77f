"""A run folder's own files, read as untrusted input: anyone who can write into one run folder must not
be able to hang, crash or redirect commands about any other run (or, beyond a clear refusal, that one).

* Every file is opened without following links (``O_NOFOLLOW``) and must be a regular file: a symlinked
  events.jsonl is not followed out of the folder, a FIFO status.json never blocks ``zerotui runs``.
* ``status.json`` is checked field by field: ``"pids": 5`` or ``"heartbeat": "soon"`` is dropped from what
  callers see (so no caller meets a wrong type) and reported as damage.
* ``damage(root)`` names the first damaged file; a damaged run lists as ``damaged`` and commands on it say
  what is wrong and how to fix it, instead of a traceback that also broke every other run's command.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from zerotui.core.safe_read import RUN_FILE_BYTES, ValueProblem, describe, load_json, quote, read_text

#: The files a run folder holds (checked by ``damage``); checkpoints/ and final/ are checked by their readers.
RUN_FILES = ("plan.yaml", "ds_config.json", "hardware.json", "estimate.json", "events.jsonl", "control.jsonl",
             "status.json", "worker.log")
STATES = ("starting", "running", "paused", "stopping", "completed", "stopped", "failed")

_NUMBER = (int, float)
#: status.json field -> the types it may hold (None is always allowed: "not known yet").
STATUS_TYPES: dict[str, tuple[type, ...]] = {
    "state": (str,), "pid": (int,), "pids": (list,), "heartbeat": _NUMBER, "launched": _NUMBER,
    "started": _NUMBER, "finished": _NUMBER, "step": (int,), "total_steps": (int,), "checkpoint_step": (int,),
    "loss": _NUMBER, "tokens_per_s": _NUMBER, "ram_fraction": _NUMBER, "phase": (str,), "reason": (str,),
    "resumed": (bool,), "rank": (int,),
}
FIX = "restore or delete the damaged file (the run's other files are kept); other runs are unaffected"


def _is_type(value: Any, types: tuple[type, ...]) -> bool:
    if value is None:
        return True
    if isinstance(value, bool) and bool not in types:  # True is an int to Python, not a pid to us
        return False
    return isinstance(value, types)


def clean_status(data: Any) -> tuple[dict[str, Any], str]:
    """``data`` with every known field of the wrong type dropped, and what was wrong ("" when nothing)."""
    if not isinstance(data, dict):
        return {}, f"status.json holds a {type(data).__name__}, not a JSON object"
    out, problems = dict(data), []
    for name, types in STATUS_TYPES.items():
        if name not in out:
            continue
        value = out[name]
        ok = _is_type(value, types)
        if ok and name == "pids" and value is not None:
            ok = all(isinstance(p, int) and not isinstance(p, bool) for p in value)
        if ok and name == "state" and value is not None:
            ok = value in STATES
        if not ok:
            del out[name]
            problems.append(f"field '{name}' is {quote(value)}")
    return out, ("status.json: " + ", ".join(problems[:3])) if problems else ""


def load_status(status_path: Path) -> tuple[dict[str, Any], str]:
    """(the status with only well-typed fields, the damage found or ""). A missing file is no damage."""
    try:
        text = read_text(status_path, RUN_FILE_BYTES, follow=False)
    except FileNotFoundError:
        return {}, ""
    except (OSError, UnicodeDecodeError) as err:
        return {}, f"status.json {describe(err)}"
    try:
        data = load_json(text, finite=False)  # a NaN loss is news, not damage
    except ValueProblem as err:
        return {}, f"status.json: {err}"
    except ValueError:
        # status.json is replaced by rename, never written in place: a file that does not parse was
        # put there by something else.
        return {}, "status.json is not valid JSON"
    return clean_status(data)


def file_damage(path: Path) -> str:
    """Why ``path`` (a run folder's file) cannot be used, or "" when it is a regular file or absent."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ""
    except OSError as err:
        return f"{path.name} {describe(err)}"
    if stat.S_ISLNK(mode):
        return f"{path.name} is a symlink; a run folder's files must be its own"
    if not stat.S_ISREG(mode):
        return f"{path.name} " + ("is a folder, not a file" if stat.S_ISDIR(mode) else
                                  "is a FIFO (named pipe), not a regular file" if stat.S_ISFIFO(mode) else
                                  "is not a regular file")
    if not os.access(path, os.R_OK):
        return f"{path.name} cannot be read (permission denied)"
    return ""


def damage(root: Path) -> str:
    """The first thing wrong with the run folder at ``root`` ("" when nothing is)."""
    for name in RUN_FILES:
        found = file_damage(root / name)
        if found:
            return found
    for name in ("checkpoints", "final"):
        p = root / name
        if p.is_symlink() or (p.exists() and not p.is_dir()):
            return f"{name}/ is not a folder of the run's own"
    return load_status(root / "status.json")[1]


def read_json_file(path: Path) -> Any:
    """A run folder's JSON file (hardware.json, estimate.json, rank records): its own regular file,
    bounded; OSError or ValueError otherwise."""
    return load_json(read_text(path, RUN_FILE_BYTES, follow=False), finite=False)


def open_append(path: Path) -> int:
    """A descriptor for appending to a run folder's own file (created if missing): never through a
    symlink, never blocking on a FIFO. OSError (ELOOP, EINVAL) otherwise."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file (a FIFO or a device)", str(path))
    os.set_blocking(fd, True)
    return fd
