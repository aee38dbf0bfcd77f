"""Writing files that other processes read: whole or not at all.

A reader (the dashboard, ``zerotui runs``, a resumed worker) must never see half a file, and a full
disk or a crash mid-write must leave the previous version intact.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def current_umask() -> int:
    """The process umask (reading it means setting it; put it straight back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def user_mode(mode: int = 0o666) -> int:
    """``mode`` as the user's umask would leave it for a newly created file (0o777 for folders/scripts)."""
    return mode & ~current_umask()


def honour_umask(root: Path | str) -> None:
    """Give ``root`` and everything under it the modes plain ``mkdir`` / ``open(.., 'w')`` would have
    given under the user's umask. A tree built in a ``mkdtemp`` folder (0700) by libraries that write
    through their own temporary files (0600) would otherwise stay private whatever the umask says."""
    top = Path(root)
    folder_mode, file_mode = user_mode(0o777), user_mode(0o666)
    for dirpath, dirnames, filenames in os.walk(top):
        os.chmod(dirpath, folder_mode)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, file_mode)


def atomic_write_bytes(path: Path | str, data: bytes, fsync: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    On any error (ENOSPC included) the temporary file is removed and ``path`` keeps its old content.
    The file gets the permissions a plain ``open(path, 'w')`` would (the user's umask), not mkstemp's 0600.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.chmod(tmp, user_mode(0o666))
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: Path | str, text: str, fsync: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def atomic_write_json(path: Path | str, obj: Any, fsync: bool = True) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, default=str) + "\n", fsync=fsync)


def create_exclusive_text(path: Path | str, text: str) -> None:
    """Write a new file, failing with FileExistsError if ``path`` exists (never a silent overwrite).

    The content goes to a temporary file first and is linked into place, so the name never points to a
    half-written file.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, user_mode(0o666))
        os.link(tmp, target)  # atomic, and fails if the target exists
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
