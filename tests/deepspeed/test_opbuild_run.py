"""A real run builds DeepSpeed's ops with no ninja on PATH and a stale lock left behind, and leaves no
shared-memory buffer in /dev/shm (distributed._release_shm_name).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


from zerotui.core.deepspeed.opbuild import STALE_AFTER_S, build_root
from opbuild_shared import BIN  # noqa: F401


SHM = Path("/dev/shm")


def _compilers_only(folder: Path) -> str:
    """A PATH holding the C/C++ toolchain an op build needs, and no ninja."""
    folder.mkdir()
    for tool in ("gcc", "g++", "c++", "cc", "ld", "as", "ar"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    return str(folder)


def _shm_buffers() -> set[str]:
    return {p.name for p in SHM.glob(f"deepspeed_allreduce_buffer_{os.getuid()}_*")} if SHM.is_dir() else set()


def test_a_run_trains_with_no_ninja_on_path_and_a_stale_lock_and_leaves_no_shm_behind(tmp_path):
    """The first CI run failed here: every run died in DeepSpeed's init with "ninja is required"; and a
    build killed earlier (its lock left behind) made every later run wait forever in "importing"."""
    import torch

    assert (Path(BIN) / "ninja").exists(), "DeepSpeed's dependency ninja should be in the venv"
    # A build folder of this test's own (tests run in parallel: a neighbour's run loading the same op
    # would remove the stale lock first, and this run's log would not say so). What is already built
    # here is copied in, so the op is rebuilt only where nothing was built yet.
    shared = Path(build_root(torch))
    own = tmp_path / "torch_extensions"
    if shared.is_dir():
        shutil.copytree(shared, own, symlinks=True, ignore=shutil.ignore_patterns("lock"))
    shm_op = own / "deepspeed_shm_comm"
    shm_op.mkdir(parents=True, exist_ok=True)
    lock = shm_op / "lock"
    lock.touch()
    os.utime(lock, (time.time() - STALE_AFTER_S - 60,) * 2)
    before = _shm_buffers()
    env = dict(os.environ, PATH=_compilers_only(tmp_path / "bin"), ZEROTUI_RUNS_DIR=str(tmp_path / "runs"),
               ZEROTUI_PRESETS_DIR=str(tmp_path / "presets"), PYTHONDONTWRITEBYTECODE="1",
               TORCH_EXTENSIONS_DIR=str(own))
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", "tiny-cpu-demo", "--max-steps", "2",
                        "--foreground"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert not lock.exists()  # the planted lock is gone
    log = next((tmp_path / "runs").glob("*/worker.log")).read_text()
    assert "ninja" not in log.lower() and f"removed {lock}" in log
    assert _shm_buffers() - before == set()
