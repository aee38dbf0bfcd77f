"""The training loop with real DeepSpeed on the CPU, the tiny model on the shipped data, one process per
run: every ZeRO stage, LoRA, control (pause, checkpoint, stop now), non-finite losses, two ranks.
"""
from __future__ import annotations

import re

import pytest
import torch

from engine_runs import assert_valid_stream, events, make_run, run_engine, run_engine_ranks


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


STAGES = {
    "stage0": dict(stage=0),
    "stage1": dict(stage=1),
    "stage2": dict(stage=2, csv_log=True),
    "stage3": dict(stage=3),
    "stage2-offload-optimizer": dict(stage=2, offload_optimizer="cpu"),
    "stage3-offload-both": dict(stage=3, offload_optimizer="cpu", offload_params="cpu"),
}


def _check_learns(paths, steps: int) -> list[dict]:
    evs = assert_valid_stream(paths)
    step_evs = [e for e in evs if e["type"] == "step"]
    assert [e["step"] for e in step_evs] == list(range(5, steps + 1, 5))
    first, last = step_evs[0]["loss"], step_evs[-1]["loss"]
    # ln(1024) = 6.93 is where an untrained model starts; the sample data is learnable well below it.
    assert first > 5.0 and last < first - 1.5, [e["loss"] for e in step_evs]
    for e in step_evs:
        assert e["tokens_per_s"] > 0 and e["tflops"] > 0 and e["step_time"] > 0 and e["loss_scale"] is None
        assert e["lr"] > 0 or e["step"] == steps
    kinds = [e["type"] for e in evs]
    assert kinds.index("run_started") < kinds.index("step")
    names = [e["name"] for e in evs if e["type"] == "phase"]
    phases = [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]  # progress repeats a name
    # The first run on a machine that needs an op compiles it, and says so, before DeepSpeed starts.
    builds = [n for n in phases if n.startswith("building DeepSpeed's ")]
    assert all(n.endswith("op (once per machine, about a minute)") for n in builds), builds
    assert [n for n in phases if n not in builds][:4] == ["loading tokenizer", "tokenising", "loading model",
                                                          "initialising DeepSpeed"]
    if builds:
        assert phases.index(builds[0]) == phases.index("initialising DeepSpeed") - len(builds)
    return evs


@pytest.mark.parametrize("name", list(STAGES))
def test_each_zero_stage_trains_the_tiny_model(tmp_path, cache, name):
    paths = make_run(tmp_path / name, max_steps=30, eval_interval=10, **STAGES[name])
    result = run_engine(paths, cache=cache)
    assert (result["state"], result["step"]) == ("completed", 30), result
    evs = _check_learns(paths, 30)
    started = next(e for e in evs if e["type"] == "run_started")
    assert started["total_steps"] == 30 and started["world_size"] == 1 and started["resumed_from"] is None
    # the sample's rows (~29 tokens) padded in micro-batches of 16: the log suggests packing, once
    hints = [e["message"] for e in evs if e["type"] == "log" and "--packing" in e["message"]]
    assert len(hints) == 1 and re.match(r"micro-batches of 16 rows are ~2\d% padding .*seq_len 128", hints[0]), hints
    evals = [e for e in evs if e["type"] == "eval"]
    assert [e["step"] for e in evals] == [10, 20, 30] and evals[-1]["loss"] < evals[0]["loss"]
    # Adam's state is made before the first step (core/train/optimizer_state.py), except where the
    # optimizer is DeepSpeed's CPU Adam, which keeps it on the host, or where DeepSpeed's 16-bit stage-0
    # wrapper has made it at initialisation already
    made = [e["message"] for e in evs if e["type"] == "log" and e["message"].startswith("optimizer state made")]
    wrapped = STAGES[name]["stage"] == 0 and started["plan"]["precision"] != "fp32"
    assert len(made) == (0 if STAGES[name].get("offload_optimizer") or wrapped else 1), made
    ckpts = [e for e in evs if e["type"] == "checkpoint"]
    assert [e["step"] for e in ckpts] == [10, 20, 30]
    assert (paths.checkpoints / "latest").read_text() == "step30"
    assert (paths.final / "config.json").exists() and (paths.final / "tokenizer.json").exists()
    if STAGES[name].get("csv_log"):
        # zerotui's own train loss reaches DeepSpeed's monitor (DeepSpeed >= 0.18.3 does not write it).
        found = [p for p in (paths.root / "csv").rglob("*.csv") if "train_loss" in p.name]
        assert found and len(found[0].read_text().strip().splitlines()) >= 6


def test_lora_trains_adapters_only_and_saves_the_adapter(tmp_path, cache):
    # lm_head among the targets: on the randomly initialised tiny base, attention adapters alone learn
    # slowly; an adapter on the head learns the answers' token statistics within a few steps.
    paths = make_run(tmp_path / "lora", method="lora", lr=1e-2, lora_r=16, max_steps=30, grad_ckpt=True,
                     lora_targets=["q_proj", "v_proj", "lm_head"])
    result = run_engine(paths, cache=cache)
    assert result["state"] == "completed", result
    evs = _check_learns(paths, 30)
    started = next(e for e in evs if e["type"] == "run_started")
    assert started["params_trainable"] < started["params_total"] / 10
    assert (paths.final / "adapter_config.json").exists() and not (paths.final / "config.json").exists()
    # Checkpoints leave out the frozen base: much smaller than a full run's (~14 MB for this model).
    assert next(e for e in evs if e["type"] == "checkpoint")["bytes"] < 5_000_000


def test_control_pause_checkpoint_and_stop_now(tmp_path, cache):
    paths = make_run(tmp_path / "ctl", max_steps=40, save_interval=0)
    result = run_engine(paths, "--pause-at", "5", "--unpause-after", "2", "--checkpoint-at", "10",
                        "--stop-now-after", "15", cache=cache)
    assert result["state"] == "stopped" and "no checkpoint" in result["reason"] and result["step"] == 15
    evs = assert_valid_stream(paths)
    logs = [e["message"] for e in evs if e["type"] == "log"]
    assert "paused after step 5" in logs and "resumed at step 5" in logs
    ckpts = [(e["step"], e["why"]) for e in evs if e["type"] == "checkpoint"]
    assert ckpts == [(10, "requested")]  # at the boundary of the step it was asked at; stop-now saves none
    step5, step10 = (next(e for e in evs if e["type"] == "step" and e["step"] == s) for s in (5, 10))
    # The 2 s pause falls in the window of steps 6-10 but is not counted as training time.
    assert step10["step_time"] * 5 <= (step10["t"] - step5["t"]) - 1.9


def test_non_finite_loss_stops_the_run_after_max_nonfinite(tmp_path, cache, monkeypatch):
    """A model folder whose head has a NaN row: every loss is NaN from the first step."""
    from transformers import AutoModelForCausalLM

    from zerotui.core.model.tiny import materialise, tiny_tokenizer

    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(cache))
    model = AutoModelForCausalLM.from_pretrained(str(materialise(42)))
    with torch.no_grad():
        model.lm_head.weight[5] = float("nan")
    folder = tmp_path / "nan-model"
    model.save_pretrained(str(folder))
    tiny_tokenizer().save_pretrained(str(folder))
    paths = make_run(tmp_path / "nan", model=str(folder), log_interval=1, max_nonfinite=3, max_steps=20,
                     save_interval=1)
    result = run_engine(paths, cache=cache)
    # A clean stop: nothing saved at the stop; resume starts again from step 0 here.
    assert result["state"] == "stopped" and "3 optimizer steps in a row (from step 1)" in result["reason"]
    assert result["step"] == 3 and "no checkpoint was saved yet" in result["reason"]
    alerts = [e for e in events(paths, "alert") if e["kind"] == "nonfinite_loss"]
    assert len(alerts) == 3 and "lower lr" in alerts[-1]["hint"]
    assert all(e["loss"] == "nan" for e in events(paths, "step"))  # JSON has no NaN: the string
    assert not list(paths.checkpoints.glob("step*"))  # spoiled weights are never saved


def test_two_ranks_stop_at_the_same_step_and_resume_together(tmp_path, cache):
    """Only rank 0 hears the stop (as only rank 0 reads control.jsonl); the broadcast makes both ranks
    save the same checkpoint and end at the same step; ZeRO-3 shards of both ranks resume."""
    paths = make_run(tmp_path / "two", stage=3, micro_batch=8, max_steps=20, save_interval=0, eval_interval=10)
    first = run_engine_ranks(paths, 2, "--stop-after", "5", cache=cache)
    assert [(r["state"], r["step"]) for r in first] == [("stopped", 5), ("stopped", 5)]
    step5 = paths.checkpoints / "step5"
    assert sorted(p.name for p in step5.glob("zerotui_rng_rank*.pt")) == ["zerotui_rng_rank0.pt", "zerotui_rng_rank1.pt"]
    assert len(list(step5.glob("*optim_states.pt"))) == 2
    second = run_engine_ranks(paths, 2, "--resume", cache=cache)
    assert [(r["state"], r["step"]) for r in second] == [("completed", 20)] * 2
    evs = assert_valid_stream(paths)
    assert [e["world_size"] for e in evs if e["type"] == "run_started"] == [2, 2]
    assert [e["step"] for e in evs if e["type"] == "step"] == [5, 10, 15, 20]  # rank 0 alone writes events
    assert [e["step"] for e in evs if e["type"] == "eval"] == [10, 20]
