"""The worker's read of its run folder's ds_config.json: bounded, never through a link, never blocked on a
FIFO; each refusal names the file and what would work."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from zerotui.core.errors import RunError
from zerotui.core.train.engine import read_ds_config

PLAN = SimpleNamespace(micro_batch=2, grad_accum=2, sequences_per_step=lambda world: 4 * world)


def _paths(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(ds_config=tmp_path / "ds_config.json")


def test_the_launch_written_config_is_read(tmp_path):
    paths = _paths(tmp_path)
    paths.ds_config.write_text(json.dumps({"train_batch_size": 4, "zero_optimization": {"stage": 2}}))
    assert read_ds_config(paths, PLAN, 1)["zero_optimization"] == {"stage": 2}


@pytest.mark.timeout(20)  # a FIFO opened for reading blocks until a writer comes: it must be refused
def test_a_fifo_is_refused_without_blocking(tmp_path):
    paths = _paths(tmp_path)
    os.mkfifo(paths.ds_config)
    with pytest.raises(RunError) as err:
        read_ds_config(paths, PLAN, 1)
    assert "ds_config.json" in str(err.value) and "FIFO" in str(err.value)


def test_a_link_out_of_the_run_folder_is_not_followed(tmp_path):
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"train_batch_size": 4}))
    run = tmp_path / "run"
    run.mkdir()
    paths = _paths(run)
    paths.ds_config.symlink_to(outside)
    with pytest.raises(RunError) as err:
        read_ds_config(paths, PLAN, 1)
    assert "ds_config.json" in str(err.value)


def test_a_huge_or_deep_file_is_refused_by_its_bounds(tmp_path):
    paths = _paths(tmp_path)
    with open(paths.ds_config, "wb") as fh:
        fh.truncate(64 << 20)  # sparse: 64 MiB of zeros, more than a ds_config may be
    with pytest.raises(RunError, match="more than"):
        read_ds_config(paths, PLAN, 1)
    paths.ds_config.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(RunError) as err:
        read_ds_config(paths, PLAN, 1)
    assert "ds_config.json" in str(err.value) and "Traceback" not in str(err.value)


def test_a_config_for_another_world_size_names_both(tmp_path):
    paths = _paths(tmp_path)
    paths.ds_config.write_text(json.dumps({"train_batch_size": 4}))
    with pytest.raises(RunError, match="2 process"):
        read_ds_config(paths, PLAN, 2)
