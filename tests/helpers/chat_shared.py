"""Helpers of the chat and eval tests on runs the real engine trained (tests/deepspeed/test_chat_eval.py,
tests/tui/test_chat_screen.py): one cache for a module's runs, and a run trained to its last step.

Import the fixtures into the test module (``from chat_shared import cache, _env  # noqa: F401``); ``_env``
is autouse there.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from engine_runs import make_run, run_engine
from zerotui.core.run.folder import RunPaths, write_status

PROMPT = "What is 47 plus 32?"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _env(cache, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(cache))  # the tiny base and the tokenised data, shared


def finished_run(root: Path, cache: Path, *, max_steps: int, **fields: Any) -> RunPaths:
    """A run folder at ``root`` that the real engine trained to ``max_steps``, completed, with the
    status.json the supervisor leaves (the runner writes none)."""
    paths = make_run(root, max_steps=max_steps, **fields)
    assert run_engine(paths, cache=cache)["state"] == "completed"
    write_status(paths, state="completed", step=max_steps)
    return paths
