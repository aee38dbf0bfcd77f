"""What DeepSpeed's op builds need (core/deepspeed/opbuild.py): the virtual environment's ninja when
zerotui runs without the venv on PATH, and no wait on a lock that a killed build left behind.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


from zerotui.core.deepspeed.opbuild import STALE_AFTER_S, clear_stale_build_locks, path_with_interpreter_bin
from opbuild_shared import BIN  # noqa: F401


def test_the_interpreter_bin_is_appended_once_and_never_ahead_of_a_system_ninja():
    assert path_with_interpreter_bin("/usr/bin:/bin") == f"/usr/bin:/bin:{BIN}"
    assert path_with_interpreter_bin(f"/usr/bin:{BIN}:/bin") == f"/usr/bin:{BIN}:/bin"
    assert path_with_interpreter_bin("") == BIN


def _lock(root: Path, op: str, age_s: float) -> Path:
    (root / op).mkdir(parents=True)
    lock = root / op / "lock"
    lock.touch()
    then = time.time() - age_s
    os.utime(lock, (then, then))
    return lock


def test_only_old_locks_with_no_build_running_are_removed(tmp_path):
    old = _lock(tmp_path, "cpu_adam", STALE_AFTER_S + 60)
    young = _lock(tmp_path, "fused_adam", 30)
    busy = _lock(tmp_path, "deepspeed_shm_comm", STALE_AFTER_S + 60)
    # A compiler at work in the folder (ninja and the compiler run there) keeps even an old lock.
    builder = subprocess.Popen(["sleep", "60"], cwd=busy.parent)
    try:
        removed = clear_stale_build_locks(str(tmp_path))
    finally:
        builder.kill()
        builder.wait()
    assert removed == [old] and not old.exists()
    assert young.exists() and busy.exists()
