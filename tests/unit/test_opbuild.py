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


def test_the_ops_a_plan_loads_and_which_are_built_already(tmp_path, monkeypatch):
    """core/deepspeed/prebuild.py: the optimizer op a plan needs, and the JIT cache's answer to "built?"
    (a built op is its .so in torch's extension folder; only missing ones are built, each said first)."""
    from zerotui.core.deepspeed import prebuild
    from zerotui.core.plan.schema import Plan

    assert prebuild.ops_for(Plan(offload_optimizer="cpu"), on_gpu=True) == ["cpu_adam"]
    assert prebuild.ops_for(Plan(), on_gpu=True) == ["fused_adam"]
    assert prebuild.ops_for(Plan(), on_gpu=False) == ["fused_adam", "deepspeed_shm_comm"]
    monkeypatch.setattr(prebuild, "build_root", lambda torch: str(tmp_path))
    (tmp_path / "cpu_adam").mkdir()
    (tmp_path / "cpu_adam" / "cpu_adam.so").write_bytes(b"\x7fELF")
    (tmp_path / "fused_adam").mkdir()  # a folder without the library: a build that never finished
    assert prebuild.is_built("cpu_adam") and not prebuild.is_built("fused_adam")
    said, built = [], []
    monkeypatch.setattr(prebuild, "build", lambda name: built.append(name) or 42.0)
    assert prebuild.build_missing(["cpu_adam", "fused_adam"], said.append) == {"fused_adam": 42.0}
    assert said == built == ["fused_adam"]


def test_the_wizard_starts_a_background_build_only_when_an_op_is_missing(tmp_path, monkeypatch):
    """probably_built looks in torch's default extension root without importing torch."""
    import subprocess

    from zerotui.core.deepspeed import prebuild

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    assert not prebuild.probably_built()
    for name in ("cpu_adam", "fused_adam"):
        (tmp_path / "py311_cpu" / name).mkdir(parents=True)
        (tmp_path / "py311_cpu" / name / f"{name}.so").write_bytes(b"\x7fELF")
    assert prebuild.probably_built()
    started = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    assert prebuild.start_in_background(tmp_path / "log") is False and not started
    (tmp_path / "py311_cpu" / "fused_adam" / "fused_adam.so").unlink()
    assert prebuild.start_in_background(tmp_path / "log") is True
    assert started and started[0][0][1:] == ["-m", "zerotui.core.deepspeed.prebuild"]
