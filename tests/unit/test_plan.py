"""The Plan: defaults, derived values, every cross-field rule, and the one-line errors users see."""
from __future__ import annotations

from pathlib import Path

import pytest

from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan, field_help, field_names, load_plan, plan_from_dict, plan_from_yaml


def test_defaults_are_a_valid_plan_that_round_trips_through_yaml():
    plan = Plan()
    again = plan_from_yaml(plan.to_yaml(), "roundtrip")
    assert again == plan
    assert plan.model == "tiny" and plan.data == "sample"


def test_every_field_has_help_text():
    missing = [name for name in field_names() if not field_help(name).strip()]
    assert missing == []


@pytest.mark.parametrize("fields, detected, world, batch", [
    ({"micro_batch": 2, "grad_accum": 8}, 0, 1, 16),          # no GPU: one CPU process
    ({"micro_batch": 2, "grad_accum": 8}, 4, 4, 64),          # all detected GPUs
    ({"micro_batch": 1, "grad_accum": 64, "gpus": 8}, 2, 8, 512),
    ({"micro_batch": 3, "grad_accum": 1, "gpu_ids": [1, 3]}, 8, 2, 6),
    ({"micro_batch": 1, "grad_accum": 2, "gpus": 8, "nodes": 2, "hostfile": "hosts"}, 8, 16, 32),
])
def test_train_batch_is_derived_from_micro_accum_and_world(fields, detected, world, batch):
    plan = plan_from_dict(fields)
    assert plan.world_size(detected) == world
    assert plan.train_batch(detected) == batch
    assert "train_batch" not in plan.to_dict()  # derived, never stored or asked


@pytest.mark.parametrize("fields, words", [
    ({"stage": 2, "offload_params": "cpu"}, ["offload_params", "stage 3"]),
    ({"stage": 1, "offload_params": "nvme", "nvme_path": "/x"}, ["offload_params", "stage 3"]),
    ({"stage": 0, "offload_optimizer": "cpu"}, ["offload_optimizer", "stage"]),
    ({"stage": 3, "offload_optimizer": "nvme"}, ["nvme_path", "--nvme-path"]),
    ({"stage": 3, "offload_params": "nvme"}, ["nvme_path"]),
    ({"nodes": 2}, ["nodes=2", "--hostfile"]),
    ({"gpu_ids": [0, 0]}, ["gpu_ids", "distinct"]),
    ({"gpu_ids": [-1]}, ["gpu_ids"]),
    ({"gpus": 2, "gpu_ids": [0, 1, 2]}, ["gpus=2", "gpu_ids"]),
    ({"method": "lora", "lora_targets": ["q_proj", " "]}, ["lora_targets", "empty"]),
    ({"method": "qlora", "stage": 3, "offload_params": "cpu"}, ["QLoRA", "offload_params", "--offload-params none"]),
    ({"method": "qlora", "quant_bits": 8, "stage": 3}, ["8-bit", "ZeRO-3", "--quant-bits 4"]),
    ({"gpu_mem_cap": "a lot"}, ["gpu_mem_cap", "24GiB"]),
])
def test_cross_field_rules_name_the_fields(fields, words):
    with pytest.raises(PlanError) as err:
        plan_from_dict(fields, "test.yaml")
    line = err.value.one_line()
    assert "\n" not in line and line.startswith("test.yaml: ")
    for w in words:
        assert w in line


def test_valid_combinations_pass_the_rules():
    p = plan_from_dict({"stage": 3, "offload_params": "nvme", "offload_optimizer": "nvme", "nvme_path": "/nvme"})
    assert (p.stage, p.offload_params, p.offload_optimizer, str(p.nvme_path)) == (3, "nvme", "nvme", "/nvme")
    assert p.uses_nvme()
    p = plan_from_dict({"stage": 1, "offload_optimizer": "cpu"})
    assert (p.stage, p.offload_optimizer, p.offload_params) == (1, "cpu", "none") and not p.uses_nvme()
    p = plan_from_dict({"gpus": 2, "gpu_ids": [0, 1]})
    assert p.world_size(detected_gpus=8) == 2 and p.gpu_ids == [0, 1]
    p = plan_from_dict({"method": "full", "lora_targets": [" "]})  # targets only matter for LoRA
    assert p.method == "full"


def test_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(PlanError) as err:
        plan_from_dict({"micro_bach": 2}, "p.yaml")
    assert "unknown key 'micro_bach'" in err.value.message
    assert "micro_batch" in err.value.message


@pytest.mark.parametrize("fields, field", [
    ({"micro_batch": -1}, "micro_batch"),
    ({"micro_batch": "two"}, "micro_batch"),
    ({"stage": 4}, "stage"),
    ({"precision": "fp8"}, "precision"),
    ({"lr": 0}, "lr"),
    ({"seq_len": 4}, "seq_len"),
    ({"master_port": 80}, "master_port"),
])
def test_type_and_range_errors_name_the_field_and_value(fields, field):
    with pytest.raises(PlanError) as err:
        plan_from_dict(fields, "p.yaml")
    assert f"field '{field}'" in err.value.message
    assert repr(list(fields.values())[0]) in err.value.message


def test_yaml_errors_give_line_and_column():
    with pytest.raises(PlanError) as err:
        plan_from_yaml("model: tiny\nstage: [2\n", "bad.yaml")
    assert "bad.yaml" in err.value.message and "line" in err.value.message


@pytest.mark.parametrize("text, words", [("", "empty"), ("- a\n- b\n", "expected a mapping")])
def test_empty_or_non_mapping_yaml(text, words):
    with pytest.raises(PlanError, match=words):
        plan_from_yaml(text, "x.yaml")


def test_load_plan_file_problems(tmp_path: Path):
    with pytest.raises(PlanError, match="no such file"):
        load_plan(tmp_path / "missing.yaml")
    with pytest.raises(PlanError, match="is a folder"):
        load_plan(tmp_path)
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(PlanError, match="not UTF-8"):
        load_plan(bad)


def test_with_changes_validates_and_leaves_the_original_alone():
    plan = Plan(stage=3, offload_params="cpu")
    changed = plan.with_changes(micro_batch=4)
    assert changed.micro_batch == 4 and plan.micro_batch == 1
    with pytest.raises(PlanError, match="stage 3"):
        plan.with_changes(stage=2)  # would leave offload_params=cpu on stage 2
    assert plan.stage == 3


def test_model_config_alias_round_trips(tmp_path: Path):
    plan = plan_from_dict({"model": "llama-2-7b", "model_config": str(tmp_path / "config.json")})
    assert plan.model_config_path == tmp_path / "config.json"
    assert plan.to_dict()["model_config"] == str(tmp_path / "config.json")
    assert plan_from_yaml(plan.to_yaml()) == plan


@pytest.mark.parametrize("field", ["micro_batch", "stage", "lr", "max_steps", "gpu_mem_cap"])
def test_a_yes_no_is_no_number(field):
    # pydantic's lax mode read `micro_batch: true` as a micro-batch of 1, in silence
    with pytest.raises(PlanError) as err:
        plan_from_dict({"model": "tiny", field: True})
    assert f"field '{field}': true is a yes/no, not a number" in str(err.value)
    assert plan_from_dict({"model": "tiny", "grad_ckpt": True, "pin_memory": False}).grad_ckpt is True
