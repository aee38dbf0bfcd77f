"""Importing ds_config.json files people copy from articles and forums."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from zerotui.core.deepspeed.config import build_ds_config
from zerotui.core.deepspeed.import_config import import_ds_config
from zerotui.core.deepspeed.keys import deepspeed_rejects, known_section_keys, known_top_level_keys
from zerotui.core.errors import ConfigImportError

# The shape of the widely copied article config: a ZeRO-3 offload recipe with an invented key.
ARTICLE = {
    "train_batch_size": 16,
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 8,
    "gradient_clipping": 1.0,
    "gradient_hp_compression": True,
    "fp16": {"enabled": True, "loss_scale": 0, "initial_scale_power": 12, "loss_scale_window": 500},
    "zero_optimization": {
        "stage": 3,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
        "offload_param": {"device": "cpu", "pin_memory": True},
        "overlap_comm": True,
        "contiguous_gradients": True,
        "sub_group_size": 1e9,
        "stage3_max_live_parameters": 1e9,
        "stage3_max_reuse_distance": 1e9,
        "stage3_gather_16bit_weights_on_model_save": True,
    },
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-5, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}},
    "steps_per_print": 100,
}


def write(tmp_path: Path, data, name="ds_config.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return p


def test_deepspeed_really_ignores_the_invented_key():
    """Why the importer must warn: DeepSpeed's own parser accepts the article's config without a word."""
    assert deepspeed_rejects(ARTICLE) is None
    assert "gradient_hp_compression" not in known_top_level_keys()
    assert "gradient_clipping" in known_top_level_keys()


def test_article_config_maps_onto_the_plan_and_warns_about_the_invented_key(tmp_path):
    r = import_ds_config(write(tmp_path, ARTICLE))
    hp = [w for w in r.warnings if "gradient_hp_compression" in w]
    assert len(hp) == 1 and "unknown key" in hp[0] and "silently" in hp[0]
    assert any(d.startswith("gradient_hp_compression:") for d in r.dropped)
    p = r.plan
    assert (p.stage, p.offload_optimizer, p.offload_params, p.pin_memory) == (3, "cpu", "cpu", True)
    assert (p.precision, p.fp16_initial_scale_power, p.fp16_loss_scale_window) == ("fp16", 12, 500)
    assert (p.micro_batch, p.grad_accum, p.grad_clip) == (2, 8, 1.0)
    assert (p.lr, p.adam_beta2, p.weight_decay, p.adam_eps) == (3e-5, 0.95, 0.1, 1e-8)
    assert p.sub_group_size == 10**9 and p.stage3_max_live_parameters == 10**9
    assert p.name == "ds_config" and "ds_config.json" in p.description
    assert not any("train_batch_size" in w for w in r.warnings)  # 16 == 2 x 8 x 1: consistent
    assert any(d.startswith("steps_per_print:") for d in r.dropped)
    # A setting the Plan has no field for is kept verbatim, and the result is a config DeepSpeed accepts.
    assert "zero_optimization.stage3_gather_16bit_weights_on_model_save" in r.kept
    cfg = build_ds_config(p, 1)
    assert cfg["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True
    assert "gradient_hp_compression" not in cfg
    assert deepspeed_rejects(cfg) is None


def test_an_unknown_key_in_a_section_is_said_to_be_refused_or_ignored_as_deepspeed_does(tmp_path):
    """`aio` is read key by key (dict.get) and takes a typo without a word; zero_optimization is a model that
    forbids unknown keys. The warning said "would refuse" for both."""
    base = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}
    loose = dict(base, aio={"block_sise": 1048576})
    strict = dict(base, zero_optimization={"stage": 2, "overlap_com": True})
    assert deepspeed_rejects(loose) is None and deepspeed_rejects(strict) is not None
    (w_loose,) = [w for w in import_ds_config(write(tmp_path, loose)).warnings if "aio.block_sise" in w]
    (w_strict,) = [w for w in import_ds_config(write(tmp_path, strict)).warnings if "overlap_com" in w]
    assert "ignores it silently" in w_loose and "would refuse" not in w_loose
    assert "would refuse" in w_strict and "did you mean 'overlap_comm'" in w_strict


def test_conflicting_train_batch_size_names_the_world_size(tmp_path):
    data = dict(ARTICLE, train_batch_size=64)
    r = import_ds_config(write(tmp_path, data))
    [w] = [w for w in r.warnings if w.startswith("train_batch_size=64")]
    assert "2 × 8 × 1 = 16" in w and "world size 1 assumed" in w and "world size of 4" in w
    assert (r.plan.micro_batch, r.plan.grad_accum) == (2, 8) and r.world_size == 1
    # With the world size it was written for, nothing conflicts.
    r4 = import_ds_config(write(tmp_path, data), overrides={"gpus": 4})
    assert not any("train_batch_size" in w for w in r4.warnings) and r4.world_size == 4
    assert r4.plan.gpus == 4


def test_missing_batch_values_are_derived_like_deepspeed_does(tmp_path):
    r = import_ds_config(write(tmp_path, {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4}),
                         world_size=2)
    assert (r.plan.micro_batch, r.plan.grad_accum) == (4, 4)
    r = import_ds_config(write(tmp_path, {"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4}))
    assert any("not divisible" in w for w in r.warnings)


def test_hf_auto_values_are_warned_about_and_filled_by_zerotui(tmp_path):
    data = {
        "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "gradient_clipping": "auto", "fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"},
        "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}},
        "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                     "warmup_num_steps": "auto"}},
        "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                              "stage3_param_persistence_threshold": "auto", "round_robin_gradients": "auto"},
    }
    r = import_ds_config(write(tmp_path, data))
    autos = [w for w in r.warnings if '"auto"' in w]
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                "gradient_clipping", "fp16.enabled", "bf16.enabled", "optimizer.params.lr",
                "optimizer.params.betas", "zero_optimization.reduce_bucket_size",
                "zero_optimization.stage3_prefetch_bucket_size", "zero_optimization.round_robin_gradients"):
        assert any(w.startswith(key + " ") for w in autos), key
    p = r.plan
    assert p.stage == 3 and p.reduce_bucket_size is None and p.stage3_prefetch_bucket_size is None
    assert p.lr_schedule == "constant" and p.micro_batch == 1
    assert "zero_optimization.round_robin_gradients" not in r.kept
    assert deepspeed_rejects(build_ds_config(p, 1)) is None


def test_unknown_and_removed_keys_inside_sections(tmp_path):
    data = {"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": True},
            "zero_optimization": {"stage": 2, "gradient_hp_compression": True, "mics_shard_size": 8,
                                  "offload_optimizer": {"device": "cpu", "pinned": True}},
            "fp16": {"enabled": True, "loss_scale_windw": 100}}
    r = import_ds_config(write(tmp_path, data))
    text = "\n".join(r.warnings)
    assert "'amp'" in text and "removed" in text
    assert "unknown key 'zero_optimization.gradient_hp_compression'" in text and "refuse" in text
    assert "'zero_optimization.mics_shard_size'" in text
    assert "unknown key 'zero_optimization.offload_optimizer.pinned'" in text
    assert "unknown key 'fp16.loss_scale_windw'" in text and "'loss_scale_window'" in text
    assert r.plan.offload_optimizer == "cpu" and r.plan.stage == 2
    assert deepspeed_rejects(build_ds_config(r.plan, 1)) is None


def test_param_offload_below_stage_3_is_dropped_with_a_reason(tmp_path):
    r = import_ds_config(write(tmp_path, {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {
        "stage": 2, "offload_param": {"device": "cpu"}}}))
    assert r.plan.offload_params == "none"
    assert any("only by ZeRO stage 3" in w for w in r.warnings)


def test_nvme_settings_map_and_a_missing_path_is_an_error(tmp_path):
    nvme = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
            "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 5, "fast_init": True},
            "offload_param": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_size": 2e8, "max_in_cpu": 1e9}},
            "aio": {"block_size": 262144, "queue_depth": 32}}
    r = import_ds_config(write(tmp_path, nvme))
    p = r.plan
    assert (p.offload_optimizer, p.offload_params, str(p.nvme_path)) == ("nvme", "nvme", "/local_nvme")
    assert (p.offload_buffer_count, p.offload_buffer_size) == (5, 200_000_000)
    assert {"zero_optimization.offload_optimizer.fast_init", "zero_optimization.offload_param.max_in_cpu",
            "aio.block_size", "aio.queue_depth"} <= set(r.kept)
    cfg = build_ds_config(p, 1)
    assert cfg["aio"]["queue_depth"] == 32 and cfg["zero_optimization"]["offload_optimizer"]["fast_init"] is True
    del nvme["zero_optimization"]["offload_optimizer"]["nvme_path"], nvme["zero_optimization"]["offload_param"]["nvme_path"]
    with pytest.raises(ConfigImportError, match="nvme_path is required"):
        import_ds_config(write(tmp_path, nvme))
    assert import_ds_config(write(tmp_path, nvme), overrides={"nvme_path": "/x"}).plan.uses_nvme()


def test_schedulers_map_onto_the_plan_schedule(tmp_path):
    base = {"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}
    cos = dict(base, scheduler={"type": "WarmupCosineLR", "params": {"total_num_steps": 1000, "warmup_num_steps": 50,
                                                                     "cos_min_ratio": 0.1, "warmup_type": "linear"}})
    p = import_ds_config(write(tmp_path, cos)).plan
    assert (p.lr_schedule, p.max_steps, p.warmup_steps, p.min_lr_ratio, p.lr) == ("cosine", 1000, 50, 0.1, 1e-4)
    lin = dict(base, scheduler={"type": "WarmupDecayLR", "params": {"total_num_steps": 300, "warmup_num_steps": 10}})
    r = import_ds_config(write(tmp_path, lin))
    assert (r.plan.lr_schedule, r.plan.max_steps) == ("linear", 300)
    assert any("logarithmically" in w for w in r.warnings)  # DeepSpeed's default warm-up is not linear
    one = dict(base, scheduler={"type": "OneCycle", "params": {}})
    r = import_ds_config(write(tmp_path, one))
    assert any("OneCycle" in w for w in r.warnings) and r.plan.lr_schedule == "cosine"
    assert "scheduler" not in build_ds_config(r.plan, 1)


def test_other_optimizers_are_dropped_with_a_warning(tmp_path):
    r = import_ds_config(write(tmp_path, {"train_micro_batch_size_per_gpu": 1,
                                          "optimizer": {"type": "Lamb", "params": {"lr": 0.5}}}))
    assert any("'Lamb'" in w and "AdamW" in w for w in r.warnings)
    assert r.plan.lr == 2e-5


def test_no_precision_section_means_fp32_and_says_so(tmp_path):
    r = import_ds_config(write(tmp_path, {"train_micro_batch_size_per_gpu": 1}))
    assert r.plan.precision == "fp32" and any("fp32" in w for w in r.warnings)


def test_relaxed_json_with_comments_is_read_with_a_warning(tmp_path):
    text = '{\n  // from a blog\n  "train_micro_batch_size_per_gpu": 4,\n  "bf16": {"enabled": true},\n}\n'
    r = import_ds_config(write(tmp_path, text))
    assert r.plan.micro_batch == 4 and r.plan.precision == "bf16"
    assert any("not strict JSON" in w for w in r.warnings)


def test_duplicate_keys_are_reported(tmp_path):
    r = import_ds_config(write(tmp_path, '{"train_micro_batch_size_per_gpu": 1, "train_micro_batch_size_per_gpu": 2}'))
    assert r.plan.micro_batch == 2 and any("more than once" in w for w in r.warnings)


@pytest.mark.parametrize("text, words", [
    ('{"train_batch_size": 8,\n  "fp16": {"enabled": true\n', "line 3"),
    ("[1, 2, 3]", "got a list"),
    ('"just a string"', "got a string"),
    ("", "empty"),
])
def test_malformed_files_give_file_and_line(tmp_path, text, words):
    p = write(tmp_path, text)
    with pytest.raises(ConfigImportError) as err:
        import_ds_config(p)
    assert str(p) in err.value.message and words in err.value.message


def test_unreadable_files(tmp_path):
    with pytest.raises(ConfigImportError, match="no such file"):
        import_ds_config(tmp_path / "missing.json")
    with pytest.raises(ConfigImportError, match="is a folder"):
        import_ds_config(tmp_path)
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"a": "caf\xe9"}')
    with pytest.raises(ConfigImportError, match="not UTF-8"):
        import_ds_config(bad)


def test_known_section_keys_come_from_deepspeed():
    assert "offload_optimizer" in known_section_keys("zero_optimization")
    assert "stage3_prefetch_bucket_size" in known_section_keys("zero_optimization")
    assert "partition_activations" in known_section_keys("activation_checkpointing")
    assert "queue_depth" in known_section_keys("aio")


def test_cli_import_writes_a_plan_and_reports(zerotui_cli, tmp_path):
    src = write(tmp_path, ARTICLE)
    r = zerotui_cli("import", str(src), "-o", "plan.yaml", "--model", "llama-2-7b")
    assert r.returncode == 0, r.stderr
    assert "gradient_hp_compression" in r.stdout and "wrote plan.yaml" in r.stdout
    from zerotui.core.plan.schema import load_plan
    plan = load_plan(tmp_path / "plan.yaml")
    assert plan.model == "llama-2-7b" and plan.stage == 3
    # Without -o the plan is the output and the warnings go to stderr.
    r = zerotui_cli("import", str(src))
    assert r.returncode == 0 and "stage: 3" in r.stdout and "gradient_hp_compression" in r.stderr
    assert "[WARNING]" not in r.stdout  # DeepSpeed's own console messages never reach stdout
    r = zerotui_cli("import", str(src), "--json")
    assert json.loads(r.stdout)["plan"]["stage"] == 3


@pytest.mark.parametrize("text,precision", [("true", "fp16"), ("yes", "fp16"), ("1", "fp16"), ("false", "fp32")])
def test_a_quoted_enabled_is_read_as_deepspeed_reads_it(text, precision):
    # DeepSpeed's pydantic config takes "yes" for true; the import read any string as off and planned fp32.
    from deepspeed.runtime.precision_config import DeepSpeedFP16Config

    assert DeepSpeedFP16Config(enabled=text).enabled is (precision == "fp16")
    r = import_ds_config({"fp16": {"enabled": text}, "zero_optimization": {"stage": 2}})
    assert r.plan.precision == precision
    assert any(f"fp16.enabled is the string '{text}'" in w for w in r.warnings)


def test_an_enabled_that_is_no_boolean_is_named_and_read_as_off():
    r = import_ds_config({"bf16": {"enabled": "sometimes"}, "zero_optimization": {"stage": 2}})
    assert r.plan.precision == "fp32"
    assert any("bf16.enabled='sometimes' is not true or false" in w for w in r.warnings)
