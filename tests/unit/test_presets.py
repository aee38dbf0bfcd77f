"""Presets: every shipped one loads, matches its scenario and exports a config DeepSpeed accepts; the user
folder; saving never overwrites; errors name the file and the field."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from zerotui.core.errors import PlanError, PresetError
from zerotui.core.plan.schema import Plan
from zerotui.core.paths import builtin_presets_dir, user_presets_dir
from zerotui.core.plan.presets import list_presets, load_preset, save_preset

SHIPPED = sorted(p.stem for p in Path(builtin_presets_dir()).glob("*.yaml"))


def test_the_five_scenarios_are_shipped():
    assert set(SHIPPED) >= {"llama7b-24gb-zero3-cpu", "llama7b-24gb-zero3-nvme", "llama70b-lora-8gpu-zero3",
                            "lora-zero2-1gpu", "tiny-cpu-demo"}


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_preset_loads_with_a_description(name, user_presets):
    plan = load_preset(name)
    assert plan.name == name
    assert plan.description.strip()
    info = next(i for i in list_presets() if i.name == name)
    assert info.where == "built-in" and info.builtin and info.description == plan.description


def test_scenarios_match_the_issue():
    a = load_preset("llama7b-24gb-zero3-cpu")
    assert (a.model, a.method, a.stage, a.offload_optimizer, a.offload_params, a.precision) == \
        ("llama-2-7b", "full", 3, "cpu", "cpu", "fp16")
    assert (a.micro_batch, a.grad_accum, a.seq_len, a.grad_ckpt, a.gpus) == (2, 8, 1024, True, 1)
    b = load_preset("llama7b-24gb-zero3-nvme")
    assert b.offload_optimizer == "nvme" and str(b.nvme_path) == "/mnt/nvme/zerotui-swap"
    assert b.to_dict() | {"name": "", "description": "", "offload_optimizer": "", "nvme_path": None} == \
        a.to_dict() | {"name": "", "description": "", "offload_optimizer": "", "nvme_path": None}
    c = load_preset("llama70b-lora-8gpu-zero3")
    assert (c.model, c.method, c.stage, c.offload_optimizer, c.precision, c.gpus) == \
        ("llama-2-70b", "lora", 3, "cpu", "bf16", 8)
    assert (c.micro_batch, c.grad_accum, c.lr_schedule, c.lr, c.grad_clip) == (1, 64, "cosine", 2e-5, 1.0)
    assert c.train_batch(0) == 512
    d = load_preset("lora-zero2-1gpu")
    assert (d.method, d.stage, d.gpus) == ("lora", 2, 1)
    e = load_preset("tiny-cpu-demo")
    assert (e.model, e.data, e.stage, e.gpus) == ("tiny", "sample", 2, 1)
    assert e.max_steps is not None and e.max_steps <= 100


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_preset_exports_a_config_deepspeed_accepts(name, zerotui_cli, tmp_path):
    from zerotui.core.deepspeed.keys import deepspeed_rejects

    r = zerotui_cli("export", name, "-o", "out")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    cfg = json.loads((out / "ds_config.json").read_text())
    assert deepspeed_rejects(cfg) is None
    plan = load_preset(name)
    world = cfg["train_batch_size"] // (plan.micro_batch * plan.grad_accum)
    assert cfg["train_batch_size"] == plan.micro_batch * plan.grad_accum * world
    launch = (out / "launch.sh").read_text()
    assert os.stat(out / "launch.sh").st_mode & stat.S_IXUSR
    assert launch.startswith("#!/usr/bin/env bash")
    assert "--module zerotui.core.run.worker" in launch and str(out) in launch
    assert "--deepspeed" in launch  # explains how to use ds_config.json with your own script
    assert "NCCL_NVLS_ENABLE=0" in launch
    assert load_preset(str(out / "plan.yaml")) == plan


def test_user_presets_dir_follows_the_environment(user_presets):
    assert user_presets_dir() == user_presets


def test_save_list_and_load_a_user_preset(user_presets):
    path = save_preset(Plan(micro_batch=3, description="mine"), "my-run")
    assert path == user_presets / "my-run.yaml"
    info = next(i for i in list_presets() if i.name == "my-run")
    assert info.where == "user" and not info.builtin and info.description == "mine"
    plan = load_preset("my-run")
    assert plan.micro_batch == 3 and plan.name == "my-run"


def test_save_never_overwrites_silently(user_presets):
    save_preset(Plan(micro_batch=3), "keep")
    before = (user_presets / "keep.yaml").read_text()
    with pytest.raises(PresetError, match="already exists"):
        save_preset(Plan(micro_batch=5), "keep")
    assert (user_presets / "keep.yaml").read_text() == before
    save_preset(Plan(micro_batch=5), "keep", overwrite=True)
    assert load_preset("keep").micro_batch == 5
    assert [p.name for p in user_presets.iterdir()] == ["keep.yaml"]  # no temp files left behind


@pytest.mark.parametrize("name", ["tiny-cpu-demo", "../escape", "", "with space", "-dash"])
def test_save_refuses_builtin_and_invalid_names(name, user_presets):
    with pytest.raises(PresetError):
        save_preset(Plan(), name)
    assert not user_presets.exists() or not any(user_presets.iterdir())


def test_unknown_preset_lists_known_ones_and_close_matches(user_presets):
    with pytest.raises(PresetError) as err:
        load_preset("tiny-cpu-dem")
    assert "unknown preset 'tiny-cpu-dem'" in err.value.message
    assert "llama70b-lora-8gpu-zero3" in err.value.message
    assert "tiny-cpu-demo" in err.value.hint


def test_a_broken_user_preset_names_the_file_and_field(user_presets):
    user_presets.mkdir()
    (user_presets / "broken.yaml").write_text("description: x\nmicro_batch: -2\n")
    with pytest.raises(PlanError) as err:
        load_preset("broken")
    msg = err.value.message
    assert str(user_presets / "broken.yaml") in msg and "micro_batch" in msg
    (user_presets / "typo.yaml").write_text("stagee: 3\n")
    with pytest.raises(PlanError, match=r"typo\.yaml.*unknown key 'stagee'.*'stage'"):
        load_preset("typo")
    # Listing still works and shows the unreadable one.
    (user_presets / "garbage.yaml").write_text("a: [\n")
    assert any(i.name == "garbage" and "unreadable" in i.description for i in list_presets())


def test_load_by_path(tmp_path, user_presets):
    f = tmp_path / "plan.yaml"
    f.write_text(Plan(micro_batch=7).to_yaml())
    assert load_preset(str(f)).micro_batch == 7
    assert load_preset(f).micro_batch == 7
    with pytest.raises(PlanError, match="no such file"):
        load_preset(str(tmp_path / "nope.yaml"))
    with pytest.raises(PlanError, match="is a folder"):
        load_preset(str(tmp_path))


def test_presets_command_lists_both_kinds(zerotui_cli, tmp_path):
    folder = tmp_path / "user-presets"
    folder.mkdir()
    (folder / "mine.yaml").write_text("description: my own\nmicro_batch: 2\n")
    r = zerotui_cli("presets", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["mine"]["where"] == "user" and rows["mine"]["description"] == "my own"
    assert rows["tiny-cpu-demo"]["where"] == "built-in"
    text = zerotui_cli("presets").stdout
    assert "tiny-cpu-demo" in text and "my own" in text


def test_a_folder_named_like_a_preset_does_not_shadow_it(tmp_path, monkeypatch, user_presets):
    (tmp_path / "tiny-cpu-demo").mkdir()  # e.g. `zerotui export tiny-cpu-demo -o tiny-cpu-demo`
    (tmp_path / "myplan").write_text("micro_batch: 3\n")
    monkeypatch.chdir(tmp_path)
    assert load_preset("tiny-cpu-demo").name == "tiny-cpu-demo"
    assert load_preset("myplan").micro_batch == 3  # an existing file that is no preset is read as a plan


def test_a_user_preset_that_is_no_file_is_named_as_what_it_is(user_presets):
    """A FIFO or a link to a device in the presets folder, asked for by name, was "unknown preset 'fifo'",
    as if it were not there (the listing's side: test_presets_listing.py)."""
    user_presets.mkdir(parents=True, exist_ok=True)
    os.mkfifo(user_presets / "fifo.yaml")
    (user_presets / "zero.yaml").symlink_to("/dev/zero")
    for name, what in (("fifo", "is a FIFO"), ("zero", "is a device")):
        with pytest.raises(PresetError) as err:
            load_preset(name)
        assert err.value.message == f"user preset {name!r} ({user_presets / (name + '.yaml')}): {what}" + \
            (" (named pipe), not a regular file" if name == "fifo" else ", not a regular file")
    assert "unknown preset 'nosuch'" in str(pytest.raises(PresetError, load_preset, "nosuch").value)
