"""A resume keeps a run's progress (core/run/progress.py): it starts again from step 0 only where the run
never saved weights, and is refused, naming what had been saved, where it had and none is left."""
from __future__ import annotations

import pytest

from zerotui.core.errors import RunError
from zerotui.core.run.folder import new_run_dir, write_status
from zerotui.core.run.progress import require_progress_kept, saved_before


def run(tmp_path, **status):
    paths = new_run_dir(tmp_path, "r")
    paths.plan.write_text("name: r\n")
    write_status(paths, state="failed", **status)
    return paths


def test_a_run_that_never_saved_starts_again_without_asking(tmp_path):
    paths = run(tmp_path, step=40)  # crashed at step 40, before its first checkpoint
    assert saved_before(paths) is None
    require_progress_kept(paths)


def test_a_run_whose_checkpoints_were_deleted_is_refused_naming_the_last(tmp_path):
    paths = run(tmp_path, step=343, checkpoint_step=330)
    (paths.checkpoints / "latest").write_text("step330")
    with pytest.raises(RunError) as err:
        require_progress_kept(paths)
    assert "had saved checkpoint step330, no longer in checkpoints/" in err.value.message
    assert "train it again from step 0" in err.value.message
    assert f"zerotui resume {paths.name} --restart" in err.value.hint


def test_a_finished_model_alone_counts_as_saved_progress(tmp_path):
    paths = run(tmp_path, step=20)
    (paths.final).mkdir()
    assert saved_before(paths) == "final/"
    with pytest.raises(RunError):
        require_progress_kept(paths)


def test_a_complete_checkpoint_is_what_a_resume_continues_from(tmp_path):
    from zerotui.core.train import checkpoint as ck

    paths = run(tmp_path, step=12, checkpoint_step=10)
    tag = paths.checkpoints / "step10"
    tag.mkdir()
    (tag / ck.MARKER).write_text("{}")
    assert ck.newest_complete(paths.checkpoints).tag == "step10"
    require_progress_kept(paths)
