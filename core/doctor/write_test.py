"""``zerotui doctor --write-test DIR``: how fast a folder's drive takes a sequential write.

The measurement is core/hardware/disks.py's, whose own checks speak of the wizard's "NVMe path". Here the
user named a folder to test, often one that has nothing to do with NVMe offload, so the folder is
checked first in those words, and a plain file given instead of a folder is named as such (the test
writes a temporary file of its own inside the folder, then removes it).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from zerotui.core.errors import HardwareError
from zerotui.core.hardware.disks import WriteProbe, measure_write
from zerotui.core.sizes import format_bytes

_WHAT = "--write-test"
_SOME_FOLDER = "give a folder on the drive to test, e.g. --write-test /tmp"


def write_test(path: str | Path, size_bytes: int) -> WriteProbe:
    """The write speed of the drive under the folder ``path``; HardwareError naming what is wrong with it."""
    target = Path(path).expanduser()
    check_folder(target, _written(size_bytes))
    # What the checks above cannot foresee (the disk fills meanwhile, a write refused by the file system)
    # the measurement reports itself, naming the folder as the folder under test.
    return measure_write(target, size_bytes, what="the folder")


def _written(size_bytes: int) -> int:
    """What measure_write writes for ``size_bytes``: whole 4 KiB blocks, as O_DIRECT wants."""
    return max(4096, (int(size_bytes) + 4095) // 4096 * 4096)


def check_folder(target: Path, size_bytes: int) -> None:
    """HardwareError unless ``target`` is a folder this user can write ``size_bytes`` into."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        broken = " (a link to nothing)" if os.path.islink(target) else ""
        raise HardwareError(f"{_WHAT} {target}: the folder does not exist{broken}",
                            f"create it with mkdir -p, or {_SOME_FOLDER}") from None
    except OSError as err:  # a folder above it this user cannot enter, a name too long
        raise HardwareError(f"{_WHAT} {target}: cannot look at it ({err.strerror or err})", _SOME_FOLDER) from None
    if stat.S_ISREG(mode):
        raise HardwareError(f"{_WHAT} {target} is a file, not a folder: the test writes a temporary file of its "
                            "own inside a folder and removes it",
                            f"give the folder to test, e.g. --write-test {target.parent}")
    if not stat.S_ISDIR(mode):
        raise HardwareError(f"{_WHAT} {target} is not a folder", _SOME_FOLDER)
    if not os.access(target, os.W_OK | os.X_OK):
        raise HardwareError(f"{_WHAT} {target}: this user cannot write in the folder{_read_only(target)}",
                            "give a folder you can write to on the drive to test")
    try:
        vfs = os.statvfs(target)
    except OSError:
        return  # the write itself says what is wrong
    free = vfs.f_bavail * vfs.f_frsize
    if free < size_bytes:
        raise HardwareError(f"{_WHAT} {target}: the folder's drive has {format_bytes(free)} free; the write "
                            f"test writes {format_bytes(size_bytes)}",
                            "free some space there, or give a smaller --write-size")


def _read_only(target: Path) -> str:
    try:
        return " (its file system is read-only)" if os.statvfs(target).f_flag & os.ST_RDONLY else ""
    except OSError:
        return ""
