"""Which checkpoint a resume starts from: the newest complete one that loads.

A checkpoint marked complete can still be damaged afterwards: a copy cut short, a disk that failed later.
A run of one process then sets it aside (``checkpoints/damaged-<tag>``, nothing deleted), says so in an
alert, and loads the one before it, so a resume after a crash needs no hand. When none is left the run
fails rather than train again from step 0: that is ``zerotui resume --restart``, the user's call. With several processes each
loads its own files inside DeepSpeed's collective load, and a rank that stops half-way would leave the
others waiting in it: there the run ends naming the folder to remove (``DamagedCheckpoint``'s hint).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.errors import RunError
from zerotui.core.train.checkpoint import Checkpointer, CheckpointInfo, DamagedCheckpoint, newest_complete

#: Prefix of a damaged checkpoint set aside: not a step tag, so no resume or prune counts it.
ASIDE = "damaged-"


def set_aside(path: Path) -> Path:
    """Rename a damaged tag folder out of the way (``damaged-step20``, then ``-2``, ``-3`` ...)."""
    for i in range(1, 1000):
        target = path.with_name(f"{ASIDE}{path.name}" + ("" if i == 1 else f"-{i}"))
        if not target.exists():
            path.rename(target)
            return target
    raise OSError(f"too many damaged copies of {path.name} set aside in {path.parent}")


def load_newest(ckpt: Checkpointer, folder: Path, world: int,
                emit: Callable[..., Any]) -> tuple[Optional[CheckpointInfo], Optional[dict[str, Any]]]:
    """(the checkpoint loaded, zerotui's client state), or (None, None) when there is none to load."""
    while True:
        info = newest_complete(folder)
        if info is None:
            return None, None
        try:
            return info, ckpt.load(info)
        except DamagedCheckpoint as err:
            if world > 1:
                raise
            try:
                aside = set_aside(info.path)
            except OSError:
                raise err from None
            older = newest_complete(folder)
            emit("alert", kind="checkpoint",
                 message=f"checkpoint {info.tag} is damaged: {err.detail}; set aside as {aside.name}",
                 hint=(f"resuming from {older.tag}" if older else "no older checkpoint to resume from")
                 + f"; delete {aside} once you no longer need it")
            if older is None:  # a resume keeps progress: training again from step 0 is the user's call
                run = folder.parent.name
                raise RunError(f"no checkpoint of the run loads (the last, {info.tag}, is damaged: {err.detail}; "
                               f"set aside as checkpoints/{aside.name}, nothing deleted)",
                               f"`zerotui resume {run} --restart` trains it again from step 0; or start a new run "
                               "with `zerotui train`")
