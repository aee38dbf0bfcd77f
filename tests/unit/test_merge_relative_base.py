"""`zerotui merge` of a LoRA run whose plan names its base as a relative path without ./
(``models/tiny-base``) that is gone: one line saying the folder is gone, not that a Hugging Face hub id
could not be found. A name that reads as a hub id keeps the hub wording."""
from __future__ import annotations

import json
import shutil

import pytest
import yaml
from cli_capture import run

from zerotui.core.run.folder import new_run_dir

NAME = "models/tiny-base"


@pytest.fixture
def lora_run(tmp_path, monkeypatch):
    """A finished LoRA run (its final/ as the adapter's save leaves it) whose plan.yaml names ``model``."""
    import torch
    from safetensors.torch import save_file

    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub id is looked for in the cache alone, at once
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    def make(model: str):
        paths = new_run_dir(tmp_path / "runs", "lora")
        paths.plan.write_text(yaml.safe_dump({"model": model, "data": "sample", "method": "lora", "lora_r": 8,
                                              "lora_targets": ["q_proj"], "precision": "fp32", "max_steps": 4}))
        paths.final.mkdir()
        (paths.final / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 8}')
        save_file({"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(8, 128)},
                  str(paths.final / "adapter_model.safetensors"))
        return paths

    return make, work


def _merge(capsys, paths):
    return run(capsys, "merge", paths.name, "--runs-dir", str(paths.root.parent),
               "-o", str(paths.root.parent.parent / "out"))


def _gone(err, paths, name=NAME):
    assert err.count("\n") == 1, err
    assert f"run {paths.name}'s base model folder {name} is gone" in err
    assert "hub" not in err.lower() and "Hugging Face" not in err


def test_a_relative_base_whose_parent_folder_is_here_is_a_folder_gone(lora_run, capsys):
    make, work = lora_run
    (work / "models").mkdir()  # the folder that held the base: its name is a path here
    paths = make(NAME)
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == ""
    _gone(err, paths)
    assert str(work / NAME) in err


def test_a_base_the_launch_recorded_as_a_folder_is_a_folder_gone(lora_run, capsys, tmp_path):
    from zerotui.core.events.stream import EventWriter

    make, _work = lora_run
    paths = make(NAME)
    launched = tmp_path / "elsewhere" / NAME  # frozen absolute by the launch; since removed
    with EventWriter(paths.events) as ev:
        ev.emit("run_started", plan={"model": str(launched)}, total_steps=4, hardware={}, world_size=1)
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == ""
    _gone(err, paths)
    assert str(launched) in err


def test_a_name_of_three_parts_is_never_a_hub_id(lora_run, capsys):
    make, _work = lora_run
    paths = make("data/models/tiny-base")
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == ""
    _gone(err, paths, "data/models/tiny-base")


def test_a_base_beside_the_runs_folder_but_not_here_says_where_to_merge_from(lora_run, capsys, tmp_path):
    from zerotui.core.model.tiny import materialise

    make, _work = lora_run
    shutil.copytree(materialise(42), tmp_path / NAME)  # beside runs/, where the run was planned
    paths = make(NAME)
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"base model folder {NAME} is not in " in err and f"run the merge from {tmp_path}" in err


def test_a_name_that_reads_as_a_hub_id_keeps_the_hub_wording(lora_run, capsys):
    make, _work = lora_run
    paths = make(NAME)  # no models/ folder anywhere: owner/name is a hub id
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == ""
    assert "is gone" not in err and "Hugging Face" in err


def test_the_launch_record_is_read_only_from_run_started(lora_run, capsys):
    make, _work = lora_run
    paths = make(NAME)
    paths.events.write_text(json.dumps({"type": "step", "step": 1, "plan": {"model": "/x/" + NAME}}) + "\n")
    code, _out, err = _merge(capsys, paths)
    assert code == 2 and "is gone" not in err
