"""The bad-input corpus's cases and helpers, shared by tests/unit/test_bad_input_corpus.py (the CLI
cases) and tests/deepspeed/test_bad_input_worker.py (the cases that reach the worker).
"""
from __future__ import annotations

from places import CORPUS
import hashlib
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest





def _generator():
    spec = importlib.util.spec_from_file_location("corpus_make_generated", CORPUS / "make_generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for part in ("plans", "data", "models"):
        shutil.copytree(CORPUS / part, root / part)
    _generator().build(root)
    return root


def _env(root: Path) -> dict[str, str]:
    return dict(os.environ, ZEROTUI_RUNS_DIR=str(root / "runs"), ZEROTUI_PRESETS_DIR=str(root / "user-presets"),
                HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")


def zerotui(root: Path, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          cwd=root, env=_env(root), timeout=timeout)


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under ``root``: (kind, size, mtime, content hash) — what 'nothing changed' means here.
    Taken with lstat and without opening anything but regular files: the hostile corpus holds FIFOs (a
    read would block), sockets and symlinks (a link's target is recorded, never followed)."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        rel = str(p.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir",)
        elif not stat.S_ISREG(st.st_mode):
            out[rel] = ("special", stat.S_IFMT(st.st_mode), st.st_mtime_ns)
        else:
            digest = hashlib.sha1(p.read_bytes()).hexdigest() if st.st_size < (1 << 20) else ""
            out[rel] = ("file", st.st_size, st.st_mtime_ns, digest)
    return out


T = ["train", "tiny-cpu-demo"]                 # the data / model cases start from the CPU demo
