"""The event stream contract: whole lines, torn lines skipped, truncation survived, NaN kept readable."""
import json
import math

import pytest

from zerotui.core.events import stream as events


def test_writer_appends_valid_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    with events.EventWriter(path) as w:
        w.emit("log", message="hello")
        w.emit("run_finished", state="completed", reason="done")
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    decoded = [json.loads(l) for l in lines]
    assert [e["type"] for e in decoded] == ["log", "run_finished"]
    assert all(events.validate(e) == [] for e in decoded)


def test_make_event_rejects_missing_fields():
    with pytest.raises(ValueError, match="lacks reason"):
        events.make_event("run_finished", state="completed")


def test_nonfinite_numbers_stay_valid_json(tmp_path):
    path = tmp_path / "e.jsonl"
    with events.EventWriter(path) as w:
        w.emit("eval", step=3, loss=float("nan"))
        w.emit("eval", step=4, loss=float("inf"))
    got = events.read_all(path)
    assert math.isnan(events.as_float(got[0]["loss"]))
    assert events.as_float(got[1]["loss"]) == math.inf


def test_reader_leaves_torn_last_line_for_later(tmp_path):
    path = tmp_path / "e.jsonl"
    full = events.encode(events.make_event("log", message="a"))
    path.write_text(full + '{"v":1,"t":1,"type":"lo')
    got, offset = events.read_new(path)
    assert [e["message"] for e in got] == ["a"]
    assert offset == len(full)
    # the writer finishes the line: the next read picks it up from the offset
    with open(path, "a") as fh:
        fh.write('g","message":"b"}\n')
    got, offset2 = events.read_new(path, offset)
    assert [e["message"] for e in got] == ["b"]
    assert offset2 == path.stat().st_size


def test_reader_skips_garbage_and_restarts_after_truncation(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("not json\n[1,2]\n" + events.encode(events.make_event("log", message="x")))
    got, offset = events.read_new(path)
    assert [e["message"] for e in got] == ["x"]
    path.write_text(events.encode(events.make_event("log", message="y")))  # shorter than offset
    got, _ = events.read_new(path, offset)
    assert [e["message"] for e in got] == ["y"]


def test_validate_flags_problems():
    assert events.validate({"v": 1, "t": 1.0, "type": "step"})  # lacks every step field
    assert events.validate({"v": 1, "t": 1.0, "type": "run_finished", "state": "weird", "reason": ""})
    assert events.validate([]) == ["not an object"]
