"""`zerotui merge` of a LoRA run whose base model folder was deleted or emptied since it trained: one line,
before anything else is printed, naming the folder and what would work. It used to say "[merging the
adapters into the base model]" first and then refuse on the second line, or, with the folder gone
altogether, call the path "not a known architecture"."""
from __future__ import annotations

import os
import shutil

import pytest
import yaml
from cli_capture import run

from zerotui.core.run.folder import new_run_dir

STAGE = "[merging"


@pytest.fixture
def lora_run(tmp_path, monkeypatch):
    """A finished LoRA run on a copy of the tiny model: its final/ as the adapter's save leaves it."""
    import torch
    from safetensors.torch import save_file

    from zerotui.core.model.tiny import materialise

    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))
    base = tmp_path / "base"
    shutil.copytree(materialise(42), base)
    paths = new_run_dir(tmp_path / "runs", "lora")
    paths.plan.write_text(yaml.safe_dump({"model": str(base), "data": "sample", "method": "lora", "lora_r": 8,
                                          "lora_targets": ["q_proj"], "precision": "fp32", "max_steps": 4}))
    paths.final.mkdir()
    (paths.final / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 8}')
    save_file({"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(8, 128)},
              str(paths.final / "adapter_model.safetensors"))
    return paths, base


def _merge(capsys, paths):
    return run(capsys, "merge", paths.name, "--runs-dir", str(paths.root.parent),
               "-o", str(paths.root.parent.parent / "out"))


def _one_line_about(err, base, paths):
    assert err.count("\n") == 1 and STAGE not in err, err
    assert f"run {paths.name}'s base model folder {base}" in err
    assert f"put the base model back at {base}, or point `model:` in {paths.plan} at a copy of it" in err


def test_a_base_folder_gone_is_one_line_naming_it(lora_run, capsys):
    paths, base = lora_run
    shutil.rmtree(base)
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == ""
    _one_line_about(err, base, paths)
    assert "is gone" in err and "not a known architecture" not in err
    assert not (paths.root.parent.parent / "out").exists()


def test_a_base_without_its_weights_is_refused_before_the_first_stage(lora_run, capsys):
    paths, base = lora_run
    (base / "model.safetensors").unlink()  # config.json stays: the plan's shape still reads
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == ""
    _one_line_about(err, base, paths)
    assert "has no weights" in err


def test_a_base_this_user_cannot_read_is_refused_before_the_first_stage(lora_run, capsys, monkeypatch):
    import zerotui.core.export.merge_lora as merge_lora

    paths, base = lora_run
    real_access = os.access
    # root reads anything whatever the mode bits say, so the refusal the check would meet is put in place
    monkeypatch.setattr(merge_lora.os, "access", lambda p, mode: real_access(p, mode)
                        and os.fspath(p) != str(base / "model.safetensors"))
    code, out, err = _merge(capsys, paths)
    assert code == 2 and out == ""
    _one_line_about(err, base, paths)
    assert "this user cannot read model.safetensors" in err and "fix their permissions" in err
