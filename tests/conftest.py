"""Shared fixtures. Keep this file small: a fixture belongs here only when several test files use it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest


@pytest.fixture
def user_presets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user presets folder (ZEROTUI_PRESETS_DIR), so tests never touch the real one."""
    folder = tmp_path / "user-presets"
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(folder))
    return folder


@pytest.fixture
def zerotui_cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Run the real ``zerotui`` CLI in a fresh process (as a user does), in ``tmp_path`` with its own
    presets and runs folders. Call it as ``zerotui_cli("export", "tiny-cpu-demo", "-o", "out")``."""
    env = dict(os.environ, ZEROTUI_PRESETS_DIR=str(tmp_path / "user-presets"),
               ZEROTUI_RUNS_DIR=str(tmp_path / "runs"), PYTHONDONTWRITEBYTECODE="1")

    def run(*argv: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "zerotui.cli.main", *argv], capture_output=True,
                              text=True, cwd=cwd or tmp_path, env=env, timeout=timeout)
    return run
