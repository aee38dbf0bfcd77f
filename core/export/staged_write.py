"""Several files written as one: all of them, or none and the old ones untouched.

``export --force`` used to replace ds_config.json and plan.yaml one by one and then fail on launch.sh,
leaving a folder whose files disagree and whose old content was lost. Here every new file is first
written whole to a temporary name next to its target (where a full disk or a permission error shows
up), and only then renamed into place; a rename that still fails puts the renamed ones back from the
hard-linked copies of the old files. A folder (or its parents) created by this call is removed again
when anything fails, so a failed export leaves no empty folders either.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _make_folder(out: Path) -> list[Path]:
    """``mkdir -p out``; returns the folders it created, deepest last."""
    missing = []
    p = out
    while not p.exists():
        missing.append(p)
        p = p.parent
    made = []
    for folder in reversed(missing):
        folder.mkdir()
        made.append(folder)
    return made


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def write_files(out: Path, contents: dict[str, str], modes: dict[str, int]) -> None:
    """Write ``contents`` ({name: text}) into folder ``out`` all or nothing; OSError names the file."""
    made = _make_folder(out)
    staged: dict[str, Path] = {}
    backups: dict[str, Path] = {}
    placed: list[str] = []
    try:
        for name, text in contents.items():
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out)
            except OSError as err:
                err.filename = str(out / name)
                raise
            staged[name] = Path(tmp)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                try:
                    fh.write(text)
                    fh.flush()
                    os.fsync(fh.fileno())
                except OSError as err:
                    err.filename = str(out / name)
                    raise
            os.chmod(tmp, modes.get(name, 0o644))
        for name in contents:
            target = out / name
            if target.exists():
                backup = out / f".{name}.old"
                _unlink(backup)
                os.link(target, backup)
                backups[name] = backup
        for name, tmp in staged.items():
            try:
                os.replace(tmp, out / name)
            except OSError as err:
                err.filename = str(out / name)
                raise
            placed.append(name)
    except BaseException:
        for name in placed:  # put the old content back (or remove what was not there before)
            if name in backups:
                os.replace(backups.pop(name), out / name)
            else:
                _unlink(out / name)
        for tmp in staged.values():
            _unlink(tmp)
        for backup in backups.values():
            _unlink(backup)
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    for backup in backups.values():
        _unlink(backup)
