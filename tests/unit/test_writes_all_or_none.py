"""Writes are all or none and honour the umask: `export` (also with --force) replaces every file or
none, names what is in the way, leaves no empty folders behind; merged models and exported files get
the modes the user's umask gives (tested under 022 and 077); `merge` loads checkpoints weights-only (a
planted pickle is refused unread) and skips a damaged newest checkpoint for the previous complete one."""
from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from zerotui.core.atomic import honour_umask
from zerotui.core.errors import RunError
from zerotui.core.export import staged_write
from zerotui.core.export.deepspeed_cli import FILES, export_plan
from zerotui.core.plan.schema import Plan


def _plan() -> Plan:
    return Plan(name="t", model="tiny", stage=2, gpus=1)


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture()
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


def test_force_with_a_folder_in_the_way_names_it_and_changes_nothing(tmp_path):
    out = tmp_path / "out"
    export_plan(_plan(), out, "test", detected_gpus=1)
    (out / "launch.sh").unlink()
    (out / "launch.sh").mkdir()
    before = _contents(out)
    with pytest.raises(RunError, match="launch.sh is not a plain file"):
        export_plan(_plan().with_changes(seq_len=64), out, "test", force=True, detected_gpus=1)
    assert _contents(out) == before


def test_a_failure_while_renaming_puts_the_old_files_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    export_plan(_plan(), out, "test", detected_gpus=1)
    before = _contents(out)
    real = os.replace

    def failing(src, dst):
        if str(dst).endswith("launch.sh"):
            raise OSError(errno.EIO, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(staged_write.os, "replace", failing)
    with pytest.raises(RunError, match="launch.sh.*nothing was changed"):
        export_plan(_plan().with_changes(seq_len=64), out, "test", force=True, detected_gpus=1)
    monkeypatch.undo()
    assert _contents(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary or backup left


def test_a_full_disk_leaves_no_new_folders_and_no_files(tmp_path, monkeypatch):
    real = tempfile.mkstemp
    calls = []

    def full(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(staged_write.tempfile, "mkstemp", full)
    with pytest.raises(RunError, match="No space left"):
        export_plan(_plan(), tmp_path / "a" / "b" / "out", "test", detected_gpus=1)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mask, file_mode, exec_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_exported_files_honour_the_umask(tmp_path, umask, mask, file_mode, exec_mode):
    umask(mask)
    out = tmp_path / "new" / "out"
    export_plan(_plan(), out, "test", detected_gpus=1)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert modes == {"ds_config.json": file_mode, "plan.yaml": file_mode, "launch.sh": exec_mode}
    assert stat.S_IMODE(out.stat().st_mode) == exec_mode and set(modes) == set(FILES)


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_a_tree_built_privately_gets_the_umask_modes(tmp_path, umask, mask, file_mode, dir_mode):
    umask(mask)
    tree = Path(tempfile.mkdtemp(dir=tmp_path))  # 0700, as merge's temporary folder is
    (tree / "sub").mkdir(mode=0o700)
    fd, name = tempfile.mkstemp(dir=tree / "sub")  # 0600, as library temporary files are
    os.close(fd)
    honour_umask(tree)
    assert stat.S_IMODE(tree.stat().st_mode) == dir_mode
    assert stat.S_IMODE((tree / "sub").stat().st_mode) == dir_mode
    assert stat.S_IMODE(os.stat(name).st_mode) == file_mode


# -- merge: weights-only loads and damaged checkpoints ---------------------------------------------

class Planted:
    """What a hostile checkpoint holds: unpickling it would create ``target``."""

    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (Path.touch, (Path(self.target),))


def _run_with_checkpoints(root: Path, checkpoints: dict[str, object]) -> object:
    from zerotui.core.run.folder import RunPaths

    import torch

    root.mkdir(parents=True)
    (root / "plan.yaml").write_text("name: t\nmodel: tiny\nstage: 0\nprecision: fp32\n")
    for tag, content in checkpoints.items():
        folder = root / "checkpoints" / tag
        folder.mkdir(parents=True)
        (folder / "zerotui_complete.json").write_text("{}")
        target = folder / "mp_rank_00_model_states.pt"
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            torch.save(content, target)
    return RunPaths(root)


def _tiny_state() -> dict:
    from safetensors.torch import load_file

    from zerotui.core.model.tiny import materialise

    return load_file(str(materialise(42) / "model.safetensors"))


def test_a_planted_pickle_in_a_checkpoint_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    from zerotui.core.export.merge import merge_run

    pwned = tmp_path / "PWNED"
    paths = _run_with_checkpoints(tmp_path / "run", {"step5": {"module": Planted(str(pwned))}})
    with pytest.raises(RunError, match="refused unread"):
        merge_run(paths, tmp_path / "merged")
    assert not pwned.exists()
    assert not (tmp_path / "merged").exists() and not list(tmp_path.glob(".merged*"))


def test_a_damaged_newest_checkpoint_is_skipped_for_the_previous_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    from zerotui.core.export.merge import merge_run

    state = _tiny_state()
    import io

    import torch

    blob = io.BytesIO()
    torch.save({"module": state}, blob)
    paths = _run_with_checkpoints(tmp_path / "run", {"step5": {"module": state},
                                                     "step10": blob.getvalue()[: len(blob.getvalue()) // 2]})
    notes: list[str] = []
    out = merge_run(paths, tmp_path / "merged", notes=notes)
    # the file named, in one sentence
    assert len(notes) == 1 and notes[0].startswith("skipped checkpoint step10: ") and "is cut short or damaged" in notes[0]
    assert json.loads((out / "zerotui.json").read_text())["source"] == "step5"
    with pytest.raises(RunError, match="step10 .* is damaged"):
        merge_run(paths, tmp_path / "merged2", checkpoint="step10")
