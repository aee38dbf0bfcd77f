"""A row's field that is null, of the wrong type, or missing is reported as what it is, with the row's
line: `{"text": null}` was "missing 'text'", sending people to look for a column that is there."""
from __future__ import annotations

import json

import pytest

from zerotui.core.data.prompts import BadRow, check_row
from zerotui.core.plan.schema import Plan


@pytest.mark.parametrize("fmt, row, why", [
    ("text", {"text": None}, "'text' is null"),
    ("text", {"text": 5}, "'text' is not text (a number)"),
    ("text", {"text": ["a", "b"]}, "'text' is not text (a list)"),
    ("text", {"text": False}, "'text' is not text (false, a boolean)"),
    ("text", {"body": "x"}, "missing 'text'"),
    ("text", {"text": "  "}, "'text' is empty"),
    ("alpaca", {"instruction": None, "output": "x"}, "'instruction' is null"),
    ("alpaca", {"instruction": "q", "output": {"a": 1}}, "'output' is not text (an object)"),
    ("alpaca", {"instruction": "q", "input": 3, "output": "x"}, "'input' is not text (a number)"),
    ("prompt_response", {"prompt": "q", "response": None}, "'response' is null"),
    ("chat", {"messages": None}, "'messages' is not a non-empty list of messages (it is null)"),
    ("chat", {"other": 1}, "'messages' is not a non-empty list of messages (it is missing)"),
    ("chat", {"messages": []}, "'messages' is not a non-empty list of messages (it is an empty list)"),
    ("chat", {"messages": [{"role": "user", "content": None}]}, "message 1 has no text content ('content' is null)"),
    ("chat", {"conversations": [{"from": "human", "value": 7}]}, "message 1 has no text content ('value' is a number)"),
    ("chat", {"messages": [{"role": "user"}]}, "message 1 has no text content (no 'content')"),
])
def test_null_wrong_type_and_missing_are_told_apart(fmt, row, why):
    with pytest.raises(BadRow) as err:
        check_row(row, Plan(), fmt)
    assert str(err.value) == why


def test_the_launch_names_the_line_and_the_null_field(zerotui_cli, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ({"text": None}, {"text": 5}, {"body": "x"})) + "\n")
    r = zerotui_cli("train", "tiny-cpu-demo", "--data", str(data), "--data-format", "text")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"zerotui: {data}: no usable text rows out of 3 (first: line 1: 'text' is null; line 2: 'text' is not "
        "text (a number); line 3: missing 'text') (text rows need a non-empty 'text' field)")
    assert "Traceback" not in r.stderr
    runs = tmp_path / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # refused before any run folder was made
