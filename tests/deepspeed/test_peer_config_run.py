"""A LLaMA-Factory training YAML (and the DeepSpeed file it names) imported and trained for real: the tiny
model with LoRA on the shipped data, through DeepSpeed on the CPU."""
from __future__ import annotations

import json

from engine_runs import assert_valid_stream, make_run, run_engine

from zerotui.core.deepspeed.peers import import_training_config
from zerotui.core.paths import SAMPLE_FILE

LF_YAML = """\
model_name_or_path: tiny
stage: sft
do_train: true
finetuning_type: lora
lora_rank: 8
lora_target: q_proj,v_proj,lm_head
deepspeed: ds_z2.json
dataset: {data}
cutoff_len: 128
per_device_train_batch_size: 8
gradient_accumulation_steps: 2
learning_rate: 1.0e-2
max_steps: 6
warmup_steps: 1
logging_steps: 2
save_steps: 3
bf16: true
"""
DS_Z2 = {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "bf16": {"enabled": "auto"},
         "zero_optimization": {"stage": 2, "overlap_comm": False, "reduce_bucket_size": "auto"}}


def test_an_imported_llamafactory_yaml_trains_the_tiny_model(tmp_path):
    (tmp_path / "ds_z2.json").write_text(json.dumps(DS_Z2))
    (tmp_path / "lf.yaml").write_text(LF_YAML.format(data=SAMPLE_FILE))
    result = import_training_config(tmp_path / "lf.yaml")
    plan = result.plan
    assert (plan.method, plan.lora_r, plan.stage, plan.micro_batch, plan.max_steps) == ("lora", 8, 2, 8, 6)
    paths = make_run(tmp_path / "run", **plan.to_dict())
    out = run_engine(paths, cache=tmp_path / "cache")
    assert (out["state"], out["step"]) == ("completed", 6), out
    evs = assert_valid_stream(paths)
    started = next(e for e in evs if e["type"] == "run_started")
    assert started["plan"]["lora_targets"] == ["q_proj", "v_proj", "lm_head"]
    assert [e["step"] for e in evs if e["type"] == "step"] == [2, 4, 6]
    assert [e["step"] for e in evs if e["type"] == "checkpoint"] == [3, 6]
    assert (paths.final / "adapter_config.json").exists()
