"""The bad-input corpus's cases and helpers, shared by tests/unit/test_bad_input_corpus.py (the CLI
cases) and tests/deepspeed/test_bad_input_worker.py (the cases that reach the worker).
"""
from __future__ import annotations

from places import CORPUS
import hashlib
import importlib.util
import os
import shutil
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
    """Every path under ``root``: (kind, size, mtime, content hash) — what 'nothing changed' means here."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        if p.is_dir():
            out[str(p.relative_to(root))] = ("dir",)
            continue
        digest = hashlib.sha1(p.read_bytes()).hexdigest() if st.st_size < (1 << 20) else ""
        out[str(p.relative_to(root))] = ("file", st.st_size, st.st_mtime_ns, digest)
    return out


T = ["train", "tiny-cpu-demo"]                 # the data / model cases start from the CPU demo
