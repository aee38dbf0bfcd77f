"""The bad-input corpus: malformed plans, argument sets, data files and model folders, each
through the real `zerotui` command in a fresh process, as a user meets them.

Every case must end with exit code 2, exactly one line on stderr that names the problem (the file or the
field) and says what would work, no traceback anywhere, and nothing written or changed: the whole corpus
folder, the runs folder and the presets folder are compared (paths, sizes, mtimes, contents) before and
after. Inputs live in tests/corpus/ (plans/, data/, models/); the binary, huge and foreign-encoding ones are
written by tests/corpus/make_generated.py.

Problems only the worker can see (torn weights, a tokenizer's view of the rows) are the slow cases at the
end: the run starts, fails in seconds — before DeepSpeed is initialised where the problem is in the model
or the data — and its run_finished event carries the same kind of one-line reason; the input files are
left as they were.
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
