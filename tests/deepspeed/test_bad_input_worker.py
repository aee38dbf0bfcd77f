"""The bad-input corpus, worker side: inputs that only the training run can find wrong (a model
folder that does not load, rows that tokenise to nothing) fail the run fast with one clear reason.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_shared import CORPUS, _generator, corpus, _env, zerotui, snapshot, T  # noqa: F401


WORKER = [
    ("torn-weights", ["--model", "models/torn_weights"], ["torn_weights", "weights file is damaged", "again"],
     "loading model"),
    ("weights-vs-config", ["--model", "models/vocab_mismatch"], ["vocab_mismatch", "do not match its config.json"],
     "loading model"),
    ("no-answer-within-seq-len", ["--data", "data/long_prompts.jsonl", "--seq-len", "16"],
     ["long_prompts.jsonl", "no answer within the first 16 tokens"], "tokenising"),
]


@pytest.fixture(scope="module")
def real_corpus(corpus) -> Path:
    _generator().build_real_models(corpus)
    rows = [{"instruction": "word " * 200, "output": "a short answer"} for _ in range(40)]
    (corpus / "data" / "long_prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return corpus


@pytest.mark.parametrize("extra, words, phase", [c[1:] for c in WORKER], ids=[c[0] for c in WORKER])
def test_worker_level_bad_input_fails_the_run_fast_with_a_clear_reason(real_corpus, extra, words, phase):
    from zerotui.core.events.stream import read_new
    from zerotui.core.run.folder import list_runs

    root = real_corpus
    before = {k: v for k, v in snapshot(root).items() if not k.startswith("runs")}
    r = zerotui(root, *T, "--max-steps", "2", *extra, "--foreground", timeout=600)
    # A run that started and then failed: exit 1 (not a refused command), the reason on stderr.
    assert r.returncode == 1, (r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stdout + r.stderr
    (last,) = [ln for ln in r.stderr.splitlines() if ln.startswith("zerotui: run ")]
    run = max(list_runs(root / "runs"), key=lambda s: s.paths.root.stat().st_mtime)
    events, _ = read_new(run.paths.events, 0)
    (finished,) = [e for e in events if e["type"] == "run_finished"]
    assert finished["state"] == "failed"
    for w in words:
        assert w in finished["reason"] and w in last, (w, finished["reason"])
    assert f"in phase {phase}" in finished["reason"]
    # It failed before DeepSpeed was initialised, and no step ran.
    phases = [e["name"] for e in events if e["type"] == "phase"]
    assert "initialising DeepSpeed" not in phases and not [e for e in events if e["type"] == "step"]
    after = {k: v for k, v in snapshot(root).items() if not k.startswith("runs")}
    assert after == before


def test_an_unknown_optimizer_in_ds_overrides_is_refused_before_launch(tmp_path):
    r = zerotui(tmp_path, *T, "--max-steps", "1", "--ds-overrides", '{"optimizer": {"type": "NoSuchOpt"}}',
                "--foreground", timeout=600)
    assert r.returncode == 2, r.stderr[-2000:]
