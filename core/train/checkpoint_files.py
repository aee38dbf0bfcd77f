"""The file side of checkpoints: RNG states, durable writes, sizes, and what a failed write means.

Kept apart from ``checkpoint.py`` (which decides when a checkpoint is complete) so that module reads as
the protocol alone.
"""
from __future__ import annotations

import errno
import os
import random
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable, Optional

_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def rng_state() -> dict[str, Any]:
    """Every generator's state in types ``torch.load(weights_only=True)`` accepts (tensors, numbers,
    strings, tuples), so loading a run folder's RNG file can never run code planted in it."""
    import numpy as np
    import torch

    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {"python": random.getstate(), "numpy": (str(kind), torch.from_numpy(keys.astype(np.int64)), int(pos),
                                                   int(has_gauss), float(gauss)),
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

    version, internal, gauss = state["python"]
    random.setstate((int(version), tuple(int(x) for x in internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.int64).astype(np.uint32), int(pos), int(has_gauss),
                         float(cached)))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load_rng_file(path: Path) -> Optional[dict[str, Any]]:
    """The RNG states in ``path`` (tensors and plain values only); None when the file is not one of ours
    (an older format, a damaged or planted file): the run then goes on with fresh random states."""
    import torch

    try:
        state = torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 - UnpicklingError for anything but plain data, or a torn file
        return None
    return state if isinstance(state, dict) and {"python", "numpy", "torch"} <= set(state) else None


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC and friends, also when torch's zip writer wraps them ('file write failed')."""
    return write_error(exc) is not None


def write_error(exc: BaseException) -> Optional[str]:
    """Why writing failed, in words, when ``exc`` (or what it wraps) is a failed write; else None.

    torch's zip writer turns a short write into a RuntimeError from inline_container.cc ('file write
    failed', or 'unexpected pos' when part of a block got through), losing the errno.
    """
    seen: set[int] = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in _DISK_ERRNOS:
            return {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
                    errno.EFBIG: "a file grew past the size limit"}[e.errno]
        text = str(e)
        if "No space left" in text:
            return "the disk is full"
        if "file write failed" in text or "inline_container" in text or "File too large" in text:
            return "a write failed"
        e = e.__cause__ or e.__context__
    return None


def release_files(exc: BaseException) -> None:
    """Close the files a failed save still holds open. torch's zip writer is only closed when its frames
    go, and the exception's traceback keeps them alive (the worker keeps the exception to report it):
    on a full disk the removed torn files would keep their space, and the worker's next small writes
    (status.json) failed with ENOSPC too (found by scripts/faults/disk_full.py on a 48 MiB tmpfs)."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)  # skips frames still running (this one's callers)
        todo += [e.__cause__, e.__context__]


def touch(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


#: The folder DeepSpeed's recovery scripts are copied into before each is renamed over its own name.
RECOVERY_TMP_PREFIX = ".zerotui-recovery-"


def whole_recovery_scripts(copy: Callable[[str], None]) -> Callable[[str], None]:
    """DeepSpeed's ``engine._copy_recovery_script(save_dir)``, made whole-or-nothing.

    At every save DeepSpeed copies zero_to_fp32.py and zero_to_torch.py into the checkpoints folder with
    ``shutil.copyfile``, straight over the copies already there: a disk that fills during the copy left a
    0-byte or truncated zero_to_fp32.py where a whole one had been, after the save's own files were
    cleaned up. Here DeepSpeed's own copy (its list of scripts, its permission bits) writes into a hidden
    folder beside them, and each script is renamed over its name only once whole; on any failure the
    folder goes and the scripts there are as they were."""
    if getattr(copy, "zerotui_whole", False):
        return copy

    def copy_whole(save_dir: str) -> None:
        for name in os.listdir(save_dir):  # a worker killed mid-copy left its folder behind
            if name.startswith(RECOVERY_TMP_PREFIX):
                shutil.rmtree(os.path.join(save_dir, name), ignore_errors=True)
        tmp = tempfile.mkdtemp(prefix=RECOVERY_TMP_PREFIX, dir=save_dir)
        try:
            copy(tmp)
            for name in os.listdir(tmp):
                # fsync first: a file system that allocates at write-back reports ENOSPC only then, and
                # the rename must not name a file a power cut would leave empty.
                fd = os.open(os.path.join(tmp, name), os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(os.path.join(tmp, name), os.path.join(save_dir, name))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    copy_whole.zerotui_whole = True  # type: ignore[attr-defined]
    return copy_whole


def fsync_tree(path: Path) -> None:
    """Flush the checkpoint's files (and the folders' entries naming them) before the marker says they
    are there (power loss, not just kill)."""
    for root, _dirs, files in os.walk(path):
        for name in files + ["."]:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)


def tree_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def damaged_file(folder: Path) -> Optional[str]:
    """The first of a checkpoint's ``.pt`` files that is not a whole archive (torch.save writes zip
    archives, whose directory sits at the end: a file cut short by a copy, a full disk or a crash after
    the checkpoint was marked complete has none), as '<name>: why'; None when every one reads."""
    import zipfile

    for path in sorted(folder.rglob("*.pt")):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            with zipfile.ZipFile(path) as archive:
                archive.namelist()
        except (zipfile.BadZipFile, OSError, ValueError) as err:
            return f"{path.relative_to(folder)}: {str(err) or type(err).__name__}"
    return None
