"""Real DeepSpeed runs of the tiny model on a mix of a save_to_disk folder and a JSONL file: it trains,
the second run's worker log says the tokenised cache answered, and a resume after a stop continues the
same sample order (every step after the resume has the loss of the uninterrupted run)."""
from __future__ import annotations

import json

import datasets
import pytest
from engine_runs import assert_valid_stream, events, losses, make_run, run_engine
from zerotui.core.paths import SAMPLE_FILE

STEPS = 8


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    rows = [json.loads(line) for line in SAMPLE_FILE.read_text(encoding="utf-8").splitlines()[:600]]
    datasets.Dataset.from_list(rows).save_to_disk(str(root / "saved"))
    (root / "notes.jsonl").write_text("".join(json.dumps({"text": f"note {i}: the river is quiet."}) + "\n"
                                              for i in range(400)), encoding="utf-8")
    return [{"path": str(root / "saved"), "weight": 3}, {"path": str(root / "notes.jsonl"), "weight": 1}]


def data_line(paths) -> str:
    (line,) = [e["message"] for e in events(paths, "log") if e["message"].startswith("data ")]
    return line


@pytest.fixture(scope="module")
def reference(tmp_path_factory, cache, mix):
    paths = make_run(tmp_path_factory.mktemp("ref") / "run", data=mix, max_steps=STEPS, save_interval=4,
                     log_interval=1)
    result = run_engine(paths, cache=cache)
    assert result["state"] == "completed", result
    return paths


def test_a_folder_and_a_file_mixed_by_weight_train(reference):
    assert_valid_stream(reference)
    line = data_line(reference)
    assert "saved + " in line and "notes.jsonl" in line and "mixed (alpaca, text)" in line
    assert "(tokenised afresh)" in line
    assert len(losses(reference)) == STEPS


def test_a_resume_reuses_the_cache_and_continues_the_same_order(tmp_path, cache, mix, reference):
    paths = make_run(tmp_path / "run", data=mix, max_steps=STEPS, save_interval=4, log_interval=1)
    stopped = run_engine(paths, "--stop-after", "3", cache=cache)
    assert (stopped["state"], stopped["step"]) == ("stopped", 3)
    assert "(assembled cache (tokenised earlier))" in data_line(paths)  # the reference run's work, reused
    resumed = run_engine(paths, "--resume", cache=cache)
    assert (resumed["state"], resumed["step"]) == ("completed", STEPS)
    ref, got = losses(reference), losses(paths)
    assert [got[s] for s in range(4, STEPS + 1)] == pytest.approx([ref[s] for s in range(4, STEPS + 1)], rel=1e-5)
