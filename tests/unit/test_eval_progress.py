"""`zerotui eval` says how far it is: each held-out micro-batch and each answered prompt reach a progress
callback, and the command prints them on stderr (it was silent for the minute and a half a CPU QLoRA
eval takes), leaving stdout to the result and --json's document."""
from __future__ import annotations

import json
import math

import pytest
from cli_capture import run

import zerotui.core.infer.weights as weights
from zerotui.core.infer.evaluate import evaluate
from zerotui.core.infer.weights import RunModel
from zerotui.core.model.tiny import tiny_model, tiny_tokenizer
from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import new_run_dir, write_status

# The stages' words as the user reads them on stderr.
DATA_STAGE, LOSS_STAGE, ANSWER_STAGE = "reading the held-out split", "held-out loss", "answering prompts"
PLAN = Plan(name="e", model="tiny", data="sample", max_samples=120, eval_fraction=0.1, micro_batch=4)


@pytest.fixture
def run_model(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    return RunModel(tiny_model().eval(), tiny_tokenizer(), PLAN, "final", 5)


def test_every_batch_and_answer_is_reported(run_model):
    seen: list[tuple[str, int, int]] = []
    result = evaluate(run_model, samples=3, progress=lambda *told: seen.append(told))
    assert seen[0] == (DATA_STAGE, 0, 0)
    loss = [(done, total) for stage, done, total in seen if stage == LOSS_STAGE]
    batches = loss[0][1]
    assert batches == math.ceil(12 / PLAN.micro_batch)  # 10% of 120 rows held out, 4 a micro-batch
    assert loss == [(d, batches) for d in range(batches + 1)]
    assert [(d, t) for stage, d, t in seen if stage == ANSWER_STAGE] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert list(dict.fromkeys(stage for stage, _, _ in seen)) == [DATA_STAGE, LOSS_STAGE, ANSWER_STAGE]
    assert result.tokens > 0 and len(result.generations) == 3


@pytest.mark.parametrize("as_json", [False, True])
def test_the_command_prints_progress_on_stderr(tmp_path, monkeypatch, capsys, run_model, as_json):
    paths = new_run_dir(tmp_path / "runs", "e")
    paths.plan.write_text(PLAN.to_yaml())
    write_status(paths, state="completed", step=5)
    def load_run_model(*_a, building=None, **_k):
        building()  # the weights settled: the command's line comes now, never before a refusal
        return run_model

    monkeypatch.setattr(weights, "load_run_model", load_run_model)
    code, out, err = run(capsys, "eval", paths.name, "--runs-dir", str(paths.root.parent), "--samples", "3",
                         *(["--json"] if as_json else []))
    assert code == 0
    lines = err.splitlines()
    assert lines[:3] == ["[loading the model]", f"[{DATA_STAGE}]", f"[{LOSS_STAGE} 0/3]"]
    assert f"[{LOSS_STAGE} 3/3]" in lines
    assert lines[-4:] == [f"[{ANSWER_STAGE} {d}/3]" for d in range(4)]
    if as_json:  # the document alone on stdout
        assert json.loads(out)["event"]["samples"] == 3
    else:
        assert out.count("\n") == 1 and "held-out loss" in out and "over 3 answers" in out


def test_long_stages_print_a_line_every_tenth(capsys):
    import sys

    from zerotui.cli.progress_lines import ProgressLines

    lines = ProgressLines(sys.stderr)
    for done in range(101):
        lines(LOSS_STAGE, done, 100)
    shown = capsys.readouterr().err.splitlines()
    assert shown == [f"[{LOSS_STAGE} {d}/100]" for d in range(0, 101, 10)]
