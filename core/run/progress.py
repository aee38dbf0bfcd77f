"""A resume continues a run; it must not quietly start it again from step 0.

A run that never saved a checkpoint (it crashed before the first) starts again from step 0 on resume:
nothing is lost. One that did save, and has none left that is complete (deleted by hand, set aside as
damaged), would train again from nothing under the same name and in time replace its ``final/``; that
is refused unless the user asks for it (``zerotui resume --restart``).
"""
from __future__ import annotations

from typing import Optional

from zerotui.core.errors import RunError
from zerotui.core.run.folder import RunPaths, read_status
from zerotui.core.safe_read import RUN_FILE_BYTES, load_json, read_text
from zerotui.core.train.checkpoint import MARKER, newest_complete
from zerotui.core.train.checkpoint_shape import shape_changes
from zerotui.core.train.resume_from import ASIDE


def saved_before(paths: RunPaths) -> Optional[str]:
    """What shows the run had saved its weights ("checkpoint step330, set aside as damaged", "final/"),
    or None."""
    step = read_status(paths).get("checkpoint_step")
    tag = f"step{step}" if isinstance(step, int) and not isinstance(step, bool) else ""
    if not tag:
        try:
            tag = read_text(paths.checkpoints / "latest", 256, follow=False).strip()
        except (OSError, UnicodeDecodeError):
            tag = ""
    try:
        aside = sorted(p.name[len(ASIDE):] for p in paths.checkpoints.iterdir() if p.name.startswith(ASIDE))
    except OSError:
        aside = []
    tag = tag or (aside[-1] if aside else "")
    if tag:
        if tag in aside:
            return f"checkpoint {tag}, set aside as damaged"
        return f"checkpoint {tag}" + ("" if (paths.checkpoints / tag).exists() else ", no longer in checkpoints/")
    return "final/" if paths.final.is_dir() else None


def require_progress_kept(paths: RunPaths) -> None:
    """RunError when a resume would start the run again from step 0 after it had saved weights."""
    if newest_complete(paths.checkpoints) is not None:
        return
    before = saved_before(paths)
    if before is None:
        return
    raise RunError(f"run {paths.name} has no complete checkpoint left to continue from (it had saved {before}); "
                   "a resume would train it again from step 0",
                   f"`zerotui resume {paths.name} --restart` does that, replacing its final/ at the end; or put "
                   "the checkpoint back, or start a new run with `zerotui train`")


def require_same_shape(paths: RunPaths, plan) -> None:
    """RunError when plan.yaml now differs from the newest complete checkpoint in a field its files depend
    on (core/train/checkpoint_shape.py): DeepSpeed's load would fail on it after the whole start-up."""
    info = newest_complete(paths.checkpoints)
    if info is None:
        return
    try:
        marker = load_json(read_text(info.path / MARKER, RUN_FILE_BYTES, follow=False))
    except (OSError, UnicodeDecodeError, ValueError):
        return  # the worker's load names a damaged checkpoint itself
    changes = shape_changes(marker.get("shape") if isinstance(marker, dict) else None, plan)
    if changes:
        raise RunError(f"run {paths.name}'s plan.yaml changed since checkpoint {info.tag} was written "
                       f"({'; '.join(changes)}), and that checkpoint loads only as it was written",
                       f"put those values back in {paths.plan}, or start a new run with the new plan")
