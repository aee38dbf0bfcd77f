"""NVMe offload's swap folder: each run writes into its own folder inside the user's nvme_path (the
ds_config says so), and removing it touches nothing else there, whatever a tampered plan points at."""
from __future__ import annotations

import os

import pytest

from zerotui.core.deepspeed.config import build_ds_config
from zerotui.core.deepspeed.nvme_swap import SWAP_PREFIX, remove_swap, swap_dir
from zerotui.core.errors import HardwareError
from zerotui.core.plan.schema import Plan


def _nvme_plan(path, **fields) -> Plan:
    return Plan(model="tiny", data="sample", stage=3, offload_optimizer="nvme", offload_params="nvme",
                nvme_path=path, **fields)


def test_a_runs_ds_config_swaps_into_the_runs_own_folder(tmp_path):
    plan = _nvme_plan(tmp_path / "nvme")
    run = tmp_path / "runs" / "tiny-20261204-1"
    zero = build_ds_config(plan, 1, run_dir=run)["zero_optimization"]
    mine = str(tmp_path / "nvme" / f"{SWAP_PREFIX}tiny-20261204-1")
    assert zero["offload_optimizer"]["nvme_path"] == zero["offload_param"]["nvme_path"] == mine
    other = build_ds_config(plan, 1, run_dir=tmp_path / "runs" / "tiny-20261204-2")["zero_optimization"]
    assert other["offload_optimizer"]["nvme_path"] != mine  # two runs sharing nvme_path never share files
    # Exported without a run (zerotui config): the user's folder as given
    exported = build_ds_config(plan, 1)["zero_optimization"]
    assert exported["offload_optimizer"]["nvme_path"] == str(tmp_path / "nvme")


def test_removing_a_runs_swap_folder_leaves_everything_else(tmp_path):
    nvme, run = tmp_path / "nvme", tmp_path / "runs" / "r1"
    mine = swap_dir(nvme, run)
    (mine / "zero_stage_3" / "optimizer" / "rank0").mkdir(parents=True)
    (mine / "zero_stage_3" / "optimizer" / "rank0" / "0_38.tensor.swp").write_bytes(b"\0" * 3 * 2**20)
    neighbour = swap_dir(nvme, tmp_path / "runs" / "r2")
    neighbour.mkdir()
    (neighbour / "x.swp").write_bytes(b"1")
    (nvme / "datasets.tar").write_bytes(b"keep")
    said = remove_swap(nvme, run)
    assert said == f"removed the NVMe swap folder {mine} (0.00 GiB)" and not mine.exists()
    assert sorted(p.name for p in nvme.iterdir()) == ["datasets.tar", neighbour.name]
    assert (neighbour / "x.swp").read_bytes() == b"1"
    assert remove_swap(nvme, run) is None  # nothing left: nothing said
    assert remove_swap(None, run) is None


def test_a_tampered_nvme_path_cannot_turn_removal_on_other_folders(tmp_path):
    """A plan edited to point nvme_path at a folder of the user's removes only the run's name there;
    a link in its place is unlinked, its target kept."""
    precious = tmp_path / "home"
    (precious / "notes").mkdir(parents=True)
    (precious / "notes" / "a.txt").write_text("mine")
    run = tmp_path / "runs" / "notes"  # a run folder named like one of the user's folders
    assert remove_swap(precious, run) is None and (precious / "notes" / "a.txt").read_text() == "mine"
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "b.txt").write_text("kept")
    os.symlink(target, swap_dir(precious, tmp_path / "runs" / "r3"))
    said = remove_swap(precious, tmp_path / "runs" / "r3")
    assert said.startswith("removed the link") and (target / "b.txt").read_text() == "kept"
    assert not swap_dir(precious, tmp_path / "runs" / "r3").is_symlink()


def test_preflight_refuses_nvme_offload_where_async_io_cannot_be_built(tmp_path, monkeypatch):
    """Without libaio DeepSpeed's async_io op cannot be built: the launch says so and what would work,
    before minutes of loading. The builder's verdict is DeepSpeed's own (is_compatible); here it is
    made to say no, as it does on a machine without libaio's headers."""
    from deepspeed.accelerator import get_accelerator

    from zerotui.core.deepspeed import prebuild
    from zerotui.core.hardware.detect import detect
    from zerotui.core.run.preflight import preflight

    monkeypatch.setattr(prebuild, "is_built", lambda name: False)
    builder_cls = type(get_accelerator().create_op_builder("AsyncIOBuilder"))
    monkeypatch.setattr(builder_cls, "is_compatible", lambda self, verbose=False: False)
    (tmp_path / "nvme").mkdir()
    with pytest.raises(HardwareError) as err:
        preflight(_nvme_plan(tmp_path / "nvme", max_steps=1), detect(), force=True)
    assert "libaio was not found" in str(err.value) and "apt install libaio-dev" in err.value.hint
    assert "offload to cpu" in err.value.hint
