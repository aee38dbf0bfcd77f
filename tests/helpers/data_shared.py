"""Helpers of the data tests (tests/unit/test_data.py, tests/unit/test_data_rows.py,
tests/unit/test_data_scale.py): a private tokenised-data cache per test, the shipped tiny tokenizer, and
reading and writing rows.

Import the fixtures into the test module (``from data_shared import _cache, tok  # noqa: F401``);
``_cache`` is autouse there.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from zerotui.core.model.tiny import tiny_tokenizer


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def tokens(ts) -> list[list[int]]:
    """The input ids of every example of a tokenised set, in order."""
    return [ts.example(i)[0].tolist() for i in range(len(ts))]
