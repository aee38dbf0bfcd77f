"""Helpers of the security tests (tests/unit/test_security.py, tests/deepspeed/test_security_runs.py).
"""
from __future__ import annotations

from places import REPO
import os
import stat
import subprocess
import sys
from pathlib import Path



ROOT = REPO


#: A folder name a shell would split and run: spaces, both quotes, ;, $( ), backticks, a glob.
WEIRD = "sp ace 'sq' \"dq\" ; touch PWNED ; $(touch PWNED2) `touch PWNED3` *"


def _cli(*argv: str, cwd: Path, env: dict, umask: int | None = None, timeout: float = 600):
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout,
                          preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


def _env(tmp: Path, **extra: str) -> dict:
    return dict(os.environ, ZEROTUI_RUNS_DIR=str(tmp / "runs"), ZEROTUI_PRESETS_DIR=str(tmp / "presets"),
                HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1", **extra)


def _modes(run: Path, skip: str = "") -> dict[str, int]:
    out = {}
    for p in [run, *run.rglob("*")]:
        rel = str(p.relative_to(run))
        if skip and (rel == skip or rel.startswith(skip + os.sep)):
            continue
        out[rel] = stat.S_IMODE(p.lstat().st_mode)
    return out
