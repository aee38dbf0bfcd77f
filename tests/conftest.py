"""Shared fixtures and the test tiers. Keep this file small: a fixture belongs here only when several
test files use it.

Tiers, one folder each, marked by it (``pytest -m unit`` runs only the fast tier):

    tests/unit/       pure core, the CLI and the worker around a small torch loop; no DeepSpeed engine
    tests/deepspeed/  the real DeepSpeed engine on the CPU, training tiny models (tens of seconds each)
    tests/tui/        the Textual app through Pilot, and snapshots

Helpers shared by the tiers live in tests/helpers/ (on ``sys.path`` from here), data in tests/fixtures/
and tests/corpus/. The files run in parallel, one process per core up to ``MAX_WORKERS`` (pytest-xdist,
``--dist loadfile``): a test must not assume it is alone on the machine (a shared op build folder, the
data cache, the CPU).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS / "helpers"))

TIERS = ("unit", "deepspeed", "tui")

# No spare workers (core/run/spare.py) unless a test asks for them: a spare started by one test's sweep
# could otherwise take a neighbour's run, and each one imports for seconds on CI's few cores. The tests
# of spares remove this and keep theirs in a cache folder of their own.
os.environ["ZEROTUI_SPARE"] = "0"
# The allocator setting decides every GPU budget (core/plan/allocator.py): the tests and the
# snapshots describe zerotui's own choice, not whatever the shell that runs them exported.
ALLOCATOR_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "ZEROTUI_SET_ALLOCATOR")
for _name in ALLOCATOR_VARS:
    os.environ.pop(_name, None)
#: Test processes at most (``-n auto`` in pyproject.toml): each DeepSpeed test trains real runs, with a
#: supervisor and a worker of its own; more at once than this buys little and costs memory and ports.
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = Path(str(item.fspath)).resolve().relative_to(TESTS).parts[0]
        if tier not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: every test lives in one of tests/{{{','.join(TIERS)}}}/")
        item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A private temporary folder per test. pytest's shared basetemp keeps only the last 3 sessions,
    and another session on this machine can remove it under a run that takes minutes."""
    folder = tempfile.mkdtemp(prefix="zerotui-test-")
    yield Path(folder)
    try:
        shutil.rmtree(folder, ignore_errors=True)
    except Exception:  # noqa: BLE001 - a test's monkeypatch of os may still be active: leave the folder
        pass


@pytest.fixture(autouse=True)
def _allocator_unset() -> Iterator[None]:
    """What a test (or a worker run in the test process) sets for the allocator ends with it."""
    yield
    for name in ALLOCATOR_VARS:
        os.environ.pop(name, None)


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
