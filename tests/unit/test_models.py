"""ModelSpec: exact parameter counts (formula vs a real meta-device build vs published numbers), LoRA
trainable counts against real PEFT, and every way a model can be named or misnamed."""
from __future__ import annotations

import json

import pytest

from zerotui.core.errors import ModelError
from zerotui.core.model.spec import (known_models, lora_trainable_params, spec_for_plan, spec_from_config,
                                 table_config)
from zerotui.core.plan.schema import Plan

# Published parameter counts (the Hugging Face model cards).
PUBLISHED = {"llama-2-7b": 6_738_415_616, "llama-3-8b": 8_030_261_248, "mistral-7b": 7_241_732_096,
             "qwen2.5-7b": 7_615_616_512, "llama-2-70b": 68_976_648_192}


@pytest.mark.parametrize("name,count", sorted(PUBLISHED.items()))
def test_table_counts_match_published_numbers(name, count):
    assert spec_for_plan(Plan(model=name)).params_total == count


@pytest.mark.parametrize("name", ["llama-2-7b", "llama-3.2-1b", "qwen2.5-0.5b", "mistral-7b"])
def test_table_formula_matches_a_meta_device_build(name):
    """The fast formula and transformers' own model agree on every count and shape, incl. tied heads
    (llama-3.2-1b, qwen2.5-0.5b) and q/k/v biases (qwen2.5)."""
    table = spec_for_plan(Plan(model=name))
    meta = spec_from_config(table_config(name), name)
    assert table.params_total == meta.params_total
    assert table.largest_param_numel == meta.largest_param_numel
    assert table.largest_layer_params == meta.largest_layer_params
    assert set(table.linear_modules) == set(meta.linear_modules)
    assert table.param_shapes == meta.param_shapes


def test_tiny_spec_counts_the_real_tiny_model():
    from zerotui.core.model.tiny import tiny_model

    model = tiny_model()
    real = sum(p.numel() for p in model.parameters())
    spec = spec_for_plan(Plan(model="tiny"))
    assert spec.params_total == real
    assert spec.num_kv_heads == 2 and spec.kv_size == spec.hidden_size // 2


@pytest.mark.parametrize("targets,r", [(["q_proj", "v_proj"], 8), (["q_proj", "k_proj", "v_proj", "o_proj"], 16),
                                        (["gate_proj", "up_proj", "down_proj"], 4), (["all-linear"], 2)])
def test_lora_trainable_count_equals_peft(targets, r):
    from peft import LoraConfig, get_peft_model

    from zerotui.core.model.tiny import tiny_model

    plan = Plan(model="tiny", method="lora", lora_r=r, lora_targets=targets)
    peft_model = get_peft_model(tiny_model(), LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets[0]
                                                         if targets == ["all-linear"] else targets,
                                                         task_type="CAUSAL_LM"))
    real = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    assert lora_trainable_params(spec_for_plan(plan), plan) == real


def test_unknown_lora_target_names_the_real_modules():
    plan = Plan(model="tiny", method="lora", lora_targets=["q_proj", "qkv"])
    with pytest.raises(ModelError) as err:
        lora_trainable_params(spec_for_plan(plan), plan)
    assert "qkv" in err.value.message and "down_proj" in err.value.hint


def test_model_config_file_is_built_on_meta(tmp_path):
    cfg = table_config("qwen2.5-0.5b")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    spec = spec_for_plan(Plan(model="my-qwen", model_config=path))
    assert spec.params_total == 494_032_768 and spec.tied_embeddings and spec.attention_bias
    assert "config" in spec.source


def test_local_folder_with_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(table_config("llama-3.2-1b")))
    assert spec_for_plan(Plan(model=str(tmp_path))).params_total == 1_235_814_400


@pytest.mark.parametrize("make,needle", [
    (lambda d: Plan(model="llama-9b"), "not a known architecture"),
    (lambda d: Plan(model=str(d)), "no config.json"),
    (lambda d: Plan(model="x", model_config=d / "missing.json"), "no such file"),
    (lambda d: Plan(model="x", model_config=_write(d / "bad.json", "{not json")), "not valid JSON"),
    (lambda d: Plan(model="x", model_config=_write(d / "nomt.json", '{"hidden_size": 8}')), "model_type"),
])
def test_bad_model_names_raise_model_error(tmp_path, make, needle):
    with pytest.raises(ModelError) as err:
        spec_for_plan(make(tmp_path))
    assert needle in err.value.message
    assert err.value.hint


def _write(path, text):
    path.write_text(text)
    return path


def test_known_models_lists_the_preset_names_and_specs_are_cached():
    names = known_models()
    for n in ("tiny", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b",
              "qwen2.5-0.5b", "qwen2.5-72b"):
        assert n in names
    assert spec_for_plan(Plan(model="llama-2-13b")) is spec_for_plan(Plan(model="llama-2-13b", stage=3))


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_lora_adapters_train_in_the_plans_dtype(precision):
    """DeepSpeed's ZeRO optimizers pick fp16 loss scaling from the first trainable weight's dtype
    (CreateLossScaler(dtype=...)): PEFT's fp32 adapters made ZeRO-3 train fp16 LoRA with a static scale
    of 1. The adapters must come out in the training dtype."""

    from deepspeed.runtime.fp16.loss_scaler import CreateLossScaler, DynamicLossScaler

    from zerotui.core.model.load import _add_lora, torch_dtype
    from zerotui.core.model.tiny import tiny_model
    from zerotui.core.plan.schema import Plan

    dtype = torch_dtype(precision)
    plan = Plan(method="lora", precision=precision, lora_targets=["q_proj", "v_proj"])
    model = _add_lora(tiny_model(42).to(dtype), plan, dtype)
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert trainable and {p.dtype for p in trainable} == {dtype}
    if precision == "fp16":
        scaler = CreateLossScaler(dtype=trainable[0].dtype, static_loss_scale=1.0, dynamic_scaling=True,
                                  dynamic_loss_args={"init_scale": 2**16, "scale_window": 1000, "min_scale": 1,
                                                     "delayed_shift": 2, "consecutive_hysteresis": False})
        assert isinstance(scaler, DynamicLossScaler) and scaler.cur_scale == 2**16


def test_a_config_built_once_is_planned_from_the_disk_cache_without_transformers(tmp_path, monkeypatch):
    """core/model/spec_cache.py: the meta-device build runs once per config body; a second process (the
    lru cache cleared) reads the stored spec; a changed config builds again; a damaged file is rebuilt."""
    import json as _json

    from zerotui.core.model import spec as spec_mod
    from zerotui.core.plan.schema import Plan

    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "m"
    folder.mkdir()
    cfg = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128}
    (folder / "config.json").write_text(_json.dumps(cfg))
    builds = []
    real = spec_mod._meta_spec
    monkeypatch.setattr(spec_mod, "_meta_spec", lambda *a, **k: builds.append(1) or real(*a, **k))
    first = spec_mod.spec_for_plan(Plan(model=str(folder)))
    spec_mod._meta_spec_cached.cache_clear()
    spec_mod._resolve_cached.cache_clear()
    again = spec_mod.spec_for_plan(Plan(model=str(folder)))
    assert len(builds) == 1 and again == first and again.params_total == first.params_total > 0
    assert spec_mod.spec_is_cached(cfg)
    for f in (tmp_path / "cache" / "model-specs").iterdir():
        f.write_text("{not json")
    spec_mod._meta_spec_cached.cache_clear()
    spec_mod._resolve_cached.cache_clear()
    assert spec_mod.spec_for_plan(Plan(model=str(folder))) == first and len(builds) == 2
    cfg["num_hidden_layers"] = 3
    (folder / "config.json").write_text(_json.dumps(cfg))
    spec_mod._meta_spec_cached.cache_clear()
    bigger = spec_mod.spec_for_plan(Plan(model=str(folder)))
    assert len(builds) == 3 and bigger.num_layers == 3


def test_a_hub_id_without_network_never_tries_the_network(monkeypatch, tmp_path):
    """core/hub.py: when the hub does not answer a quick connect, look-ups use the cache only (no retry
    storm), and the message says the hub could not be reached."""
    import transformers

    from zerotui.core.hardware import hub
    from zerotui.core.errors import ModelError
    from zerotui.core.model import spec as spec_mod
    from zerotui.core.plan.schema import Plan

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.setattr(hub, "hub_reachable", lambda: False)
    calls = []
    real = transformers.AutoConfig.from_pretrained
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained",
                        lambda *a, **k: calls.append(k.get("local_files_only")) or real(*a, **k))
    spec_mod._resolve_cached.cache_clear()
    with pytest.raises(ModelError, match="the hub could not be reached"):
        spec_mod.spec_for_plan(Plan(model="someone/not-cached-model"))
    assert calls == [True]


def test_the_hub_probe_honours_the_offline_setting(monkeypatch):
    from zerotui.core.hardware import hub

    hub.hub_reachable.cache_clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    try:
        assert hub.hub_reachable() is False
    finally:
        hub.hub_reachable.cache_clear()


def test_a_config_transformers_refuses_says_why_not_just_the_heading():
    """transformers' config validation puts a heading on the first line and the reason on the next; the
    message kept only the heading ("Class validation error for validator 'validate_architecture':")."""
    from zerotui.core.errors import ModelError
    from zerotui.core.model.spec import spec_from_config

    bad = {"model_type": "llama", "hidden_size": 128, "num_attention_heads": 3, "intermediate_size": 256,
           "num_hidden_layers": 2, "vocab_size": 1000}
    with pytest.raises(ModelError) as err:
        spec_from_config(bad, name="odd-heads", source="its config.json")
    assert "The hidden size (128) is not a multiple of the number of attention heads (3)" in err.value.message
    with pytest.raises(ModelError) as err:
        spec_from_config({**bad, "num_attention_heads": 4, "vocab_size": None}, name="no-vocab")
    assert "vocab_size" in err.value.message and "expected int" in err.value.message
