"""Whether a folder can take a run's files: a full, over-quota or read-only disk is named up front,
before anything is written, and a write that fails anyway becomes one StorageError (exit 1).

``zerotui train`` checks the runs folder, ``zerotui resume`` the run's own folder; the launch removes
what it made when a later write fails (``start.start_run``), so a refused launch leaves nothing behind.
"""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from zerotui.core.errors import HardwareError, StorageError
from zerotui.core.sizes import format_bytes

#: Below this much free space a run is refused before it starts. The launch files are a few KiB, but the
#: worker appends to worker.log, events.jsonl and status.json from its first second: with less, it would
#: die of ENOSPC within moments, leaving a failed or torn run folder instead of one clear line.
MIN_FREE_BYTES = 1 << 20

_WORDS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
          errno.EFBIG: "a file would pass the size limit (ulimit -f)", errno.EROFS: "the file system is read-only",
          errno.EACCES: "permission denied", errno.EPERM: "permission denied"}


def storage_problem(err: BaseException) -> str | None:
    """What a failed write says about the disk, in words; None when it is not the disk's doing."""
    return _WORDS.get(err.errno) if isinstance(err, OSError) else None


def free_bytes(folder: Path) -> int | None:
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def check_storage(folder: Path, what: str, hint: str, min_free: int = MIN_FREE_BYTES) -> None:
    """Create ``folder`` if needed, write (then remove) a probe file, and require ``min_free`` bytes free.

    StorageError (exit 1) for a full, over-quota or read-only disk; HardwareError (exit 2) for a path
    that cannot be a folder at all (a file in the way), which is the input's fault."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".zerotui-probe-", dir=folder)
        try:
            # An empty file needs no block, so a full disk would pass; fsync: a file system that allocates
            # at write-back (ext4, XFS) reports ENOSPC only then.
            os.write(fd, b"\0" * 512)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as err:
        problem = storage_problem(err)
        if problem is None:
            raise HardwareError(f"{what} {folder} is not writable ({err.strerror or err})", hint) from None
        raise StorageError(f"{what} {folder} cannot be written: {problem}", hint) from None
    free = free_bytes(folder)
    if free is not None and free < min_free:
        raise StorageError(f"{what} {folder} cannot be written: the disk is full ({format_bytes(free)} free, "
                           f"a run needs at least {format_bytes(min_free)})", hint)


def storage_error(err: OSError, folder: Path, what: str, hint: str) -> StorageError | None:
    """The StorageError to raise for ``err`` met while writing ``folder``; None when not the disk's doing."""
    problem = storage_problem(err)
    if problem is None:
        return None
    free = free_bytes(folder)
    left = f" ({format_bytes(free)} free)" if problem == "the disk is full" and free is not None else ""
    return StorageError(f"{what} {folder} cannot be written: {problem}{left}", hint)


def check_checkpoint_room(folder: Path, one: int, most: int, force: bool = False, resume: bool = False,
                          held: int = 0) -> str | None:
    """Refuse (StorageError) a run whose runs folder cannot take even one of its checkpoints (``one``
    bytes): it would train until its first save and fail there, losing what it trained. ``most``: what
    keeping its checkpoints takes at the moment a new one is written, named in the message. ``force``
    launches anyway (space freed meanwhile, a folder emptied by hand). ``resume``: ``folder`` is the run's
    own, whose kept checkpoints already hold their space; the next save needs one more. ``held``: how many
    complete checkpoints that folder holds already (a resume).

    Returns a warning (not a refusal) when one fits but the ``keep_checkpoints`` the plan keeps do not:
    the run trains and saves, and fails at a later save, still with a checkpoint to resume from."""
    free = free_bytes(folder)
    if free is None:
        return None
    what = f"the run folder {folder}" if resume else f"the runs folder {folder}"
    if not force and free < one:
        hint = ("free space on that disk (older runs' checkpoints, `zerotui runs` lists them); --force resumes "
                "anyway; nothing was written") if resume else (
            "choose a runs folder on a disk with room (--runs-dir or ZEROTUI_RUNS_DIR), or train adapters "
            "(--method lora or qlora: checkpoints hold only them); --force launches anyway; nothing was written")
        raise StorageError(
            f"{what} has {format_bytes(free)} free, and one checkpoint of this plan takes "
            f"{format_bytes(one)} (the optimizer's fp32 state, 12 bytes a trainable weight, and below ZeRO-3 the "
            f"16-bit weights; keeping them takes up to {format_bytes(most)}): the run would fail at its "
            f"{'next' if resume else 'first'} save",
            hint)
    return _keep_warning(what, free, one, most, held, resume)


def _keep_warning(what: str, free: int, one: int, most: int, held: int, resume: bool) -> str | None:
    # The checkpoints a resumed run holds already take no more of the free space.
    need = max(one, most - held * one)
    if one <= 0 or free >= need:
        return None
    if free < one:  # only with --force: the refusal above was overridden
        return (f"{what} has {format_bytes(free)} free, and one checkpoint of this plan takes "
                f"{format_bytes(one)}: the run will fail at its {'next' if resume else 'first'} save unless "
                f"{format_bytes(one - free)} is freed first")
    at_once = most // one  # keep_checkpoints, and the next one, written before the oldest is removed
    # The highest keep_checkpoints that fits what is free now, counting the checkpoints already there.
    fits = free // one + held - 1
    if fits >= 1:
        where = "in the run's plan.yaml" if resume else f"(--keep-checkpoints {fits})"
        lower = f"set keep_checkpoints to {fits} {where}"
    else:  # even one kept and the next written do not fit: only the end's checkpoint does
        where = "save_interval: 0 and save_minutes: 0 in the run's plan.yaml" if resume else \
            "--save-interval 0 --save-minutes 0"
        lower = f"save only at the end ({where})"
    return (f"{what} has {format_bytes(free)} free, but keeping {at_once - 1} checkpoint(s) of "
            f"{format_bytes(one)} takes up to {format_bytes(most)} (the next one is written before the oldest "
            f"is removed)" + (f", {held} of them there already" if held else "")
            + f": the run will fail at a later save once the disk is full; {lower}, or free "
            f"{format_bytes(need - free)} on that disk")
