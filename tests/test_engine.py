"""The training loop. Fast tests: the LR schedule, the live fp16 loss scale on DeepSpeed's own optimizer
objects, the FLOP formula. Slow tests (marked): real DeepSpeed on CPU training the tiny model on the
shipped data, one process per run: every ZeRO stage, CPU offload, LoRA, control, non-finite losses."""
from __future__ import annotations

import pytest
import torch

from engine_runs import assert_valid_stream, events, make_run, run_engine, run_engine_ranks
from zerotui.core.flops import flops_per_token
from zerotui.core.lossscale import ScaleWatch, live_loss_scale
from zerotui.core.schedule import lr_factor


# -- schedule ---------------------------------------------------------------------------------------------

def test_warmup_then_cosine_reaches_the_floor_on_the_last_step():
    f = [lr_factor(s, 10, 2, "cosine", 0.1) for s in range(1, 11)]
    assert f[0] == pytest.approx(0.5) and f[1] == pytest.approx(1.0)  # warm-up: step 1 already trains
    assert f[2] == pytest.approx(1.0) and f[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(f[1:], f[2:]))  # never rises after warm-up
    mid = lr_factor(6, 10, 2, "cosine", 0.0)
    assert 0.3 < mid < 0.7


def test_linear_and_constant_schedules():
    assert [round(lr_factor(s, 5, 0, "linear", 0.0), 3) for s in range(1, 6)] == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert {lr_factor(s, 5, 0, "constant", 0.0) for s in range(1, 6)} == {1.0}


def test_lambda_scheduler_steps_once_per_optimizer_step():
    from types import SimpleNamespace

    from zerotui.core.schedule import build_scheduler

    plan = SimpleNamespace(warmup_steps=0, lr_schedule="linear", min_lr_ratio=0.0, lr=1.0)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = build_scheduler(opt, plan, 5)
    seen = []
    for _ in range(5):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])


# -- loss scale --------------------------------------------------------------------------------------------

def test_live_loss_scale_of_the_stage0_fp16_optimizer_follows_overflows():
    """DeepSpeed refuses fp16 on this CPU ('Type fp16 is not supported'), so the optimizer is built
    directly: the scale lives in loss_scale_config.cur_scale since 0.18.6."""
    from deepspeed.runtime.fp16.fused_optimizer import FP16_Optimizer

    lin = torch.nn.Linear(4, 4).half()
    fo = FP16_Optimizer(torch.optim.AdamW(lin.parameters(), lr=1e-3), static_loss_scale=1.0,
                        dynamic_loss_scale=True, initial_dynamic_scale=2**16,
                        dynamic_loss_args={"init_scale": 2**16, "scale_window": 1000, "min_scale": 1,
                                           "delayed_shift": 1, "consecutive_hysteresis": False})
    assert live_loss_scale(fo, "fp16") == 2**16
    for p in lin.parameters():
        p.grad = torch.full_like(p, float("inf"))
    fo.step()
    assert fo.overflow and live_loss_scale(fo, "fp16") == 2**15  # live, after the overflow
    assert live_loss_scale(fo, "bf16") is None


@pytest.mark.parametrize("module,cls", [("deepspeed.runtime.zero.stage_1_and_2", "DeepSpeedZeroOptimizer"),
                                        ("deepspeed.runtime.zero.stage3", "DeepSpeedZeroOptimizer_Stage3")])
def test_live_loss_scale_of_zero_optimizers(module, cls):
    """The ZeRO optimizers' own ``loss_scale`` property over their DynamicLossScaler (no engine needed)."""
    import importlib

    from deepspeed.runtime.fp16.loss_scaler import DynamicLossScaler

    opt = object.__new__(getattr(importlib.import_module(module), cls))
    opt.custom_loss_scaler = False
    opt.loss_scaler = DynamicLossScaler(init_scale=1024, scale_window=1000, min_scale=1, delayed_shift=1,
                                        consecutive_hysteresis=False)
    assert live_loss_scale(opt, "fp16") == 1024
    opt.loss_scaler.cur_scale /= 2  # what update_scale(overflow=True) does (it needs a process group)
    assert live_loss_scale(opt, "fp16") == 512


def test_scale_watch_alerts_once_near_the_floor_and_again_after_recovery():
    w = ScaleWatch(min_scale=1.0)
    assert w.check(65536.0) is None and w.check(None) is None
    alert = w.check(4.0, skipped_in_interval=7)
    assert alert["kind"] == "loss_scale_collapse" and "7 steps skipped" in alert["message"]
    assert "bf16" in alert["hint"]
    assert w.check(2.0) is None  # still down there: no repeat
    assert w.check(64.0) is None and w.check(4.0) is not None


# -- FLOPs -------------------------------------------------------------------------------------------------

def test_flops_per_token_is_6n_plus_attention_and_counts_recompute_and_lora():
    n, layers, h, s = 1_000_000, 4, 128, 64
    full = flops_per_token(n, n, layers, h, s, lora=False, recompute=False)
    assert full == 6 * n + 12 * layers * h * s
    assert flops_per_token(n, n, layers, h, s, lora=False, recompute=True) == full + 2 * n + 4 * layers * h * s
    lora = flops_per_token(n, 1000, layers, h, s, lora=True, recompute=False)
    assert lora == 4 * n + 2 * 1000 + 12 * layers * h * s  # no weight gradients for the frozen base


# -- real runs (DeepSpeed on CPU) -------------------------------------------------------------------------

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
    assert phases[:4] == ["loading tokenizer", "tokenising", "loading model", "initialising DeepSpeed"]
    return evs


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STAGES))
def test_each_zero_stage_trains_the_tiny_model(tmp_path, cache, name):
    paths = make_run(tmp_path / name, max_steps=30, eval_interval=10, **STAGES[name])
    result = run_engine(paths, cache=cache)
    assert (result["state"], result["step"]) == ("completed", 30), result
    evs = _check_learns(paths, 30)
    started = next(e for e in evs if e["type"] == "run_started")
    assert started["total_steps"] == 30 and started["world_size"] == 1 and started["resumed_from"] is None
    evals = [e for e in evs if e["type"] == "eval"]
    assert [e["step"] for e in evals] == [10, 20, 30] and evals[-1]["loss"] < evals[0]["loss"]
    ckpts = [e for e in evs if e["type"] == "checkpoint"]
    assert [e["step"] for e in ckpts] == [10, 20, 30]
    assert (paths.checkpoints / "latest").read_text() == "step30"
    assert (paths.final / "config.json").exists() and (paths.final / "tokenizer.json").exists()
    if STAGES[name].get("csv_log"):
        # zerotui's own train loss reaches DeepSpeed's monitor (DeepSpeed >= 0.18.3 does not write it).
        found = [p for p in (paths.root / "csv").rglob("*.csv") if "train_loss" in p.name]
        assert found and len(found[0].read_text().strip().splitlines()) >= 6


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_non_finite_loss_stops_the_run_after_max_nonfinite(tmp_path, cache, monkeypatch):
    """A model folder whose head has a NaN row: every loss is NaN from the first step."""
    from transformers import AutoModelForCausalLM

    from zerotui.core.tiny import materialise, tiny_tokenizer

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
    # A clean stop (issue 8): nothing saved at the stop; resume starts again from step 0 here.
    assert result["state"] == "stopped" and "3 optimizer steps in a row (from step 1)" in result["reason"]
    assert result["step"] == 3 and "no checkpoint was saved yet" in result["reason"]
    alerts = [e for e in events(paths, "alert") if e["kind"] == "nonfinite_loss"]
    assert len(alerts) == 3 and "lower lr" in alerts[-1]["hint"]
    assert all(e["loss"] == "nan" for e in events(paths, "step"))  # JSON has no NaN: the string
    assert not list(paths.checkpoints.glob("step*"))  # spoiled weights are never saved


@pytest.mark.slow
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


@pytest.mark.slow
def test_fp16_on_a_cpu_is_refused_before_loading(tmp_path, cache):
    paths = make_run(tmp_path / "fp16", precision="fp16")
    result = run_engine(paths, cache=cache)
    assert result["type"] == "HardwareError" and "--precision bf16" in result["error"]
    assert not events(paths, "phase")  # nothing was loaded first
