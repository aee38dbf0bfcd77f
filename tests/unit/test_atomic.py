"""Files other processes read are written whole or not at all."""
import errno
import os

import pytest

from zerotui.core import atomic


def test_atomic_write_replaces_whole_file_with_umask_permissions(tmp_path):
    target = tmp_path / "status.json"
    target.write_text("old")
    old_umask = os.umask(0o022)
    try:
        atomic.atomic_write_json(target, {"state": "running"})
    finally:
        os.umask(old_umask)
    assert '"running"' in target.read_text()
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]  # no temp file left


def test_failed_write_keeps_old_content_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "plan.yaml"
    target.write_text("old content")
    real_fsync = os.fsync

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError):
        atomic.atomic_write_text(target, "new content")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert target.read_text() == "old content"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.yaml"]


def test_create_exclusive_never_overwrites(tmp_path):
    target = tmp_path / "preset.yaml"
    atomic.create_exclusive_text(target, "first")
    with pytest.raises(FileExistsError):
        atomic.create_exclusive_text(target, "second")
    assert target.read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["preset.yaml"]
