"""`zerotui merge`: the output is a normal Hugging Face folder that ``from_pretrained`` loads and that
computes what the trained model computes, for a full ZeRO-3 run (shards consolidated from a checkpoint)
and a LoRA run (adapter merged into the base); bad requests fail with one clear line."""
from __future__ import annotations

import json

import pytest
import torch

from engine_runs import events, make_run, run_engine
from zerotui.core.errors import RunError
from zerotui.core.export.merge import merge_run


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _env(cache, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(cache))  # merge rebuilds the tiny base from the same cache


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, cache):
    paths = make_run(tmp_path_factory.mktemp("full") / "run", stage=3, max_steps=10, save_interval=5)
    assert run_engine(paths, cache=cache)["state"] == "completed"
    return paths


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory, cache):
    paths = make_run(tmp_path_factory.mktemp("lora") / "run", method="lora", lr=1e-2, max_steps=10,
                     save_interval=5, lora_targets=["q_proj", "v_proj", "down_proj"])
    assert run_engine(paths, cache=cache)["state"] == "completed"
    return paths


def logits(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(3, 1000, (2, 24), generator=g)
    with torch.no_grad():
        return model(input_ids=x).logits.float()


def load(folder, dtype=None):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype).eval()


def test_zero3_shards_consolidate_to_the_trained_model(tmp_path, full_run):
    out = merge_run(full_run, tmp_path / "merged", checkpoint="latest")
    merged, trained = load(out), load(full_run.final)  # final/: the engine's own 16-bit weights
    assert merged.dtype == torch.bfloat16  # the run's precision by default
    sm, st = merged.state_dict(), trained.state_dict()
    assert sm.keys() == st.keys() and all(torch.equal(sm[k], st[k]) for k in st)
    assert torch.equal(logits(merged), logits(trained))
    assert (out / "tokenizer.json").exists() and not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_an_older_checkpoint_in_fp32_differs_from_the_end(tmp_path, full_run):
    out = merge_run(full_run, tmp_path / "step5", checkpoint="step5", dtype="fp32")
    m = load(out)
    assert m.dtype == torch.float32
    assert not torch.allclose(logits(m), logits(load(full_run.final, torch.float32)), atol=1e-3)


def test_lora_merged_into_the_base_gives_the_adapted_logits(tmp_path, lora_run):
    from peft import PeftModel

    from zerotui.core.model.tiny import materialise

    out = merge_run(lora_run, tmp_path / "merged", dtype="fp32")
    merged = load(out)
    assert not any("lora" in k for k in merged.state_dict())  # a plain model, no PEFT needed to load
    adapted = PeftModel.from_pretrained(load(materialise(42), torch.float32), str(lora_run.final)).eval()
    base = load(materialise(42), torch.float32)
    torch.testing.assert_close(logits(merged), logits(adapted), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(logits(merged), logits(base), atol=1e-3)  # the adapter did change something

    from_ckpt = load(merge_run(lora_run, tmp_path / "from-ckpt", checkpoint="latest", dtype="fp32"))
    # fp32 master adapters vs the bf16 copies final/ holds: equal up to bf16 rounding of the adapters.
    torch.testing.assert_close(logits(from_ckpt), logits(merged), atol=2e-2, rtol=2e-2)


def test_merge_refuses_a_non_empty_folder_and_a_run_without_weights(tmp_path, full_run):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(RunError, match="not empty"):
        merge_run(full_run, busy)
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]

    empty = make_run(tmp_path / "never-saved")
    with pytest.raises(RunError) as err:
        merge_run(empty, tmp_path / "out")
    assert "no final/ model and no complete checkpoint" in err.value.message and "save-interval" in err.value.hint
    with pytest.raises(RunError, match="has no checkpoint 'step7'"):
        merge_run(full_run, tmp_path / "out", checkpoint="step7")
    assert not (tmp_path / "out").exists()


def test_merge_cli(tmp_path, full_run, zerotui_cli):
    r = zerotui_cli("merge", str(full_run.root), "-o", str(tmp_path / "m"), "--checkpoint", "5", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["output"] == str(tmp_path / "m")  # stdout is only the JSON
    assert (tmp_path / "m" / "model.safetensors").exists()
    again = zerotui_cli("merge", str(full_run.root), "-o", str(tmp_path / "m"))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "not empty" in again.stderr


@pytest.fixture(scope="module")
def qlora_run(tmp_path_factory, cache):
    paths = make_run(tmp_path_factory.mktemp("qlora") / "run", method="qlora", precision="fp32", lr=1e-2,
                     max_steps=12, log_interval=2, save_interval=6, lora_targets=["q_proj", "v_proj", "down_proj"])
    assert run_engine(paths, cache=cache)["state"] == "completed"
    return paths


def test_qlora_trains_a_4bit_base_and_merges_into_what_the_adapter_saw(tmp_path, qlora_run):
    """bitsandbytes trains 4-bit models on the CPU: the loss goes down, the base stays 4-bit, and the
    merged model (base quantised as in training, dequantised, adapter folded in) loads with
    from_pretrained and computes the adapter model's logits."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from engine_runs import losses
    from zerotui.core.model.quantise import prepare_base, quantization_config
    from zerotui.core.model.tiny import materialise
    from zerotui.core.plan.schema import load_plan

    steps = losses(qlora_run)
    assert steps[12] < steps[2] - 0.1, steps
    logs = [e["message"] for e in events(qlora_run, "log")]
    assert any("QLoRA 4-bit" in m for m in logs), logs
    plan = load_plan(qlora_run.plan)
    base = AutoModelForCausalLM.from_pretrained(str(materialise(42)), dtype=torch.float32, device_map={"": "cpu"},
                                                quantization_config=quantization_config(plan, torch.float32))
    prepare_base(base)
    assert type(base.model.layers[0].self_attn.q_proj).__name__ == "Linear4bit"
    adapted = PeftModel.from_pretrained(base, str(qlora_run.final)).eval()
    out = merge_run(qlora_run, tmp_path / "merged")
    merged = load(out)
    assert merged.dtype == torch.float32 and not any("lora" in k for k in merged.state_dict())
    assert type(merged.model.layers[0].self_attn.q_proj).__name__ == "Linear"
    torch.testing.assert_close(logits(merged), logits(adapted), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(logits(merged), logits(load(materialise(42), torch.float32)), atol=1e-3)
