"""The newest eval of a run is found however far back it is (core/events/backscan.py), in a 100 MB events
file without reading it whole, through torn and damaged lines, and again after the file grows."""
from __future__ import annotations

import json
import random

import pytest
from zerotui.core.events import backscan
from zerotui.core.events.stream import EventWriter, encode, make_event, read_end
from zerotui.core.run.folder import new_run_dir, summarise
from zerotui.core.run.overview import TAIL_BYTES, eval_figures, latest_eval, overview

STEP = {"epoch": 0.1, "lr": 3e-4, "grad_norm": 0.7, "loss_scale": None, "skipped": False, "samples_per_s": 132.0,
            "tokens_per_s": 16900.0, "tflops": 1.2, "step_time": 0.12}


def _step(i: int, loss: float = 1.5) -> str:
    return encode(make_event("step", step=i, loss=loss, **STEP))


def test_an_eval_100_mb_back_is_found_and_the_list_shows_it(tmp_path):
    paths = new_run_dir(tmp_path / "runs", "long")
    paths.plan.write_text("name: long\n")
    with EventWriter(paths.events) as w:
        w.emit("run_started", plan={}, hardware={}, world_size=1, total_steps=10**6)
        w.emit("eval", step=500, loss=2.0, perplexity=7.389, rougeL=0.4125, samples=5, source="final")
    filler = "".join(_step(i) for i in range(1000))
    with open(paths.events, "a", encoding="utf-8") as fh:
        fh.writelines(filler for _ in range(100_000_000 // len(filler) + 1))
    assert paths.events.stat().st_size > 100_000_000
    assert not [e for e in read_end(paths.events, TAIL_BYTES, tail=True) if e["type"] == "eval"]

    row = overview(summarise(paths))
    assert eval_figures(row.eval) == {"eval_loss": 2.0, "perplexity": 7.389, "rougeL": 0.4125}
    assert row.step == 999  # the tail still gives the last step


def test_the_scan_reads_a_bounded_amount(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(encode(make_event("eval", step=1, loss=3.0)) + "".join(_step(i) for i in range(5000)))
    size = path.stat().st_size
    assert backscan.latest_of_type(path, "eval", limit=size // 2) is None  # older than the bound
    path2 = tmp_path / "copy.jsonl"
    path2.write_bytes(path.read_bytes())
    assert backscan.latest_of_type(path2, "eval", limit=size)["loss"] == 3.0


@pytest.mark.parametrize("block", [7, 64, 1000])
def test_random_files_agree_with_reading_every_line(tmp_path, monkeypatch, block):
    """Lines across block edges, lines longer than a block, damaged lines holding the type's text."""
    monkeypatch.setattr(backscan, "BLOCK", block)
    rng = random.Random(block)
    for n in range(40):
        lines = []
        for i in range(rng.randint(0, 30)):
            kind = rng.choice(["step", "eval", "log", "damaged"])
            if kind == "damaged":
                lines.append('{"v":1,"type":"eval","loss": oops\n')
            elif kind == "log":
                lines.append(encode(make_event("log", message='"type":"eval"' * rng.randint(1, 30))))
            else:
                lines.append(_step(i, float(i)) if kind == "step" else encode(make_event("eval", step=i, loss=float(i))))
        path = tmp_path / f"events-{n}.jsonl"
        path.write_text("".join(lines))
        expected = None
        for line in lines:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev["type"] == "eval":
                expected = ev
        assert backscan.latest_of_type(path, "eval") == expected, "".join(lines)


def test_a_torn_last_line_is_not_an_event_until_it_is_whole(tmp_path):
    paths = new_run_dir(tmp_path / "runs", "torn")
    with EventWriter(paths.events) as w:
        w.emit("eval", step=10, loss=2.5)
        w.emit("step", step=11, loss=2.4, **STEP)
    line = encode(make_event("eval", step=20, loss=1.5, perplexity=4.48))
    with open(paths.events, "a", encoding="utf-8") as fh:
        fh.write(line[:25])  # the writer is half-way through the line
    assert latest_eval(paths)["step"] == 10
    with open(paths.events, "a", encoding="utf-8") as fh:
        fh.write(line[25:])
    assert latest_eval(paths)["step"] == 20  # the remembered position did not skip the finished line
    with EventWriter(paths.events) as w:
        for i in range(100):
            w.emit("step", step=21 + i, loss=1.4, **STEP)
    assert latest_eval(paths)["perplexity"] == 4.48  # remembered, with only the new bytes read


def test_a_file_replaced_under_the_same_name_is_read_again(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(encode(make_event("eval", step=1, loss=3.0)))
    assert backscan.latest_of_type(path, "eval")["loss"] == 3.0
    new = tmp_path / "new.jsonl"
    new.write_text(_step(1))
    new.replace(path)  # another inode: what was remembered is not this file's
    assert backscan.latest_of_type(path, "eval") is None
    assert backscan.latest_of_type(tmp_path / "missing.jsonl", "eval") is None


@pytest.mark.parametrize("where", ["middle", "first", "last"])
def test_a_line_longer_than_any_event_is_passed_over(tmp_path, monkeypatch, where):
    """A 1 GB line appended to events.jsonl was gathered block by block, copying what was gathered
    with every block: `zerotui runs` took 110 s. A line over LONGEST_LINE is now passed over whole, and
    the events on either side of it are still found (here scaled down: 64-byte blocks, a 300-byte bound,
    a 5,000-byte log line)."""
    monkeypatch.setattr(backscan, "BLOCK", 64)
    monkeypatch.setattr(backscan, "LONGEST_LINE", 300)
    before = encode(make_event("eval", step=1, loss=3.0))
    huge = encode(make_event("log", message='"type":"eval"' * 400))
    after = "".join(_step(i) for i in range(5))
    parts = {"middle": [before, huge, after], "first": [huge, after], "last": [before, after, huge]}[where]
    path = tmp_path / f"events-{where}.jsonl"
    path.write_text("".join(parts))
    found = backscan.latest_of_type(path, "eval")
    assert (found or {}).get("loss") == (None if where == "first" else 3.0)
    assert backscan.latest_of_type(path, "step")["step"] == 4


def test_an_event_line_longer_than_the_bound_is_not_gathered(tmp_path, monkeypatch):
    """The over-long line is skipped, not gathered, even when it is the event asked for: the eval before it
    is the answer (gathering it whole is what cost the 110 s)."""
    monkeypatch.setattr(backscan, "BLOCK", 64)
    monkeypatch.setattr(backscan, "LONGEST_LINE", 300)
    path = tmp_path / "events.jsonl"
    path.write_text(encode(make_event("eval", step=1, loss=3.0)) + _step(2)
                    + encode(make_event("eval", step=3, loss=9.0, source="x" * 5000)))
    assert backscan.latest_of_type(path, "eval")["loss"] == 3.0
    monkeypatch.setattr(backscan, "LONGEST_LINE", 1 << 20)  # within the bound it is read as any other
    other = tmp_path / "other.jsonl"
    other.write_bytes(path.read_bytes())
    assert backscan.latest_of_type(other, "eval")["loss"] == 9.0
