"""What DeepSpeed's just-in-time op builds need from the process that triggers them.

DeepSpeed compiles its ops (the CPU backend's shared-memory collectives, cpu_adam, fused_adam) on first
use through ``torch.utils.cpp_extension.load``. Two things go wrong there on users' machines, and both
were seen on this project's own machines:

* **No ninja on PATH.** torch runs whatever ``ninja`` PATH finds. pip puts ninja (a DeepSpeed
  dependency) into the virtual environment's bin; ``.venv/bin/zerotui`` run without activating the
  environment does not have that folder on PATH, and on a machine without a system ninja every build
  fails with "ninja is required" (this project's first CI run failed so, in every test that started
  DeepSpeed). The folder is appended, not prepended, so a system ninja stays first where there is one:
  two ninja versions hash build commands differently, and each rebuilds the op the other built (seen
  here: ninja 1.11 and 1.13 alternating, ~100 s of fused_adam rebuild per start).
* **A stale build lock.** torch marks a build in progress with an empty ``lock`` file in the op's build
  folder and removes it when the build ends. A process killed mid-build (Ctrl-C, kill -9, a closed SSH
  session, the OOM killer) leaves the file behind, and every later load waits for it forever with no
  message (seen here: a run stuck in "importing libraries" at file_baton.py:50 until the stall alert).
  A lock older than :data:`STALE_AFTER_S` with no process working in that folder is removed.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

#: A lock this old is a leftover: the slowest op build seen here (cpu_adam on 2 busy cores) took ~90 s.
STALE_AFTER_S = 600.0


def path_with_interpreter_bin(path: str) -> str:
    """``path`` (a PATH value) with this interpreter's bin folder appended when it is not there yet."""
    bin_dir = os.path.dirname(sys.executable)
    parts = [p for p in path.split(os.pathsep) if p]
    return path if not bin_dir or bin_dir in parts else os.pathsep.join([*parts, bin_dir])


def put_interpreter_bin_on_path() -> None:
    """The same, for this process's own environment (and so for every process it starts)."""
    os.environ["PATH"] = path_with_interpreter_bin(os.environ.get("PATH", ""))


def build_root(torch: Any) -> str:
    """Where ``torch.utils.cpp_extension.load`` builds (its ``_get_build_directory``, not created)."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root:
        return root
    from torch.utils.cpp_extension import get_default_build_root

    if getattr(torch.version, "hip", None):
        acc = "rocm" + torch.version.hip.replace(".", "")
    elif getattr(torch.version, "cuda", None):
        acc = "cu" + torch.version.cuda.replace(".", "")
    else:
        acc = "cpu"
    py = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
    return os.path.join(get_default_build_root(), f"{py}_{acc}")


def _someone_builds_in(folder: Path) -> bool:
    """Whether a process (ninja, the compiler) has its working directory in ``folder``."""
    import psutil

    for proc in psutil.process_iter():
        try:
            cwd = proc.cwd()
        except (psutil.Error, OSError):
            continue
        if cwd and (cwd == str(folder) or cwd.startswith(str(folder) + os.sep)):
            return True
    return False


def clear_stale_build_locks(root: Optional[str] = None, stale_after_s: float = STALE_AFTER_S,
                            now: Optional[float] = None) -> list[Path]:
    """Remove the build locks under ``root`` (default: torch's build root) that a killed build left
    behind; return the ones removed. A young lock, or one whose folder a compiler works in, is kept."""
    if root is None:
        import torch

        root = build_root(torch)
    now = time.time() if now is None else now
    removed = []
    for lock in sorted(Path(root).glob("*/lock")):
        try:
            age = now - lock.stat().st_mtime
        except FileNotFoundError:
            continue
        if age < stale_after_s or _someone_builds_in(lock.parent):
            continue
        try:
            lock.unlink()
        except FileNotFoundError:
            continue
        removed.append(lock)
    return removed
