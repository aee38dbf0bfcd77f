"""Weights on NVMe with every weight swapped, with real DeepSpeed and libaio on the CPU. DeepSpeed keeps
up to max_in_cpu (1e9) weights in host RAM and swaps only the rest, and a tensor under 1 MiB is never
swapped, so the test model's matrices are 768 x 768 and more, and max_in_cpu is 0: as a model past 1e9
weights is on a GPU. With DeepSpeed's reuse distance (1e9) the second step ran out of swap buffers, as
the 1.1B plan did on an H200; with zerotui's (0) the same plan trains."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zerotui.core.run.folder import RunPaths

SWAP_ALL = json.dumps({"zero_optimization": {"offload_param": {"max_in_cpu": 0}}})


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from zerotui.core.model.tiny import tiny_tokenizer

    folder = tmp_path_factory.mktemp("llama-768")
    tokenizer = tiny_tokenizer()
    cfg = AutoConfig.for_model("llama", vocab_size=len(tokenizer), hidden_size=768, intermediate_size=2048,
                               num_hidden_layers=2, num_attention_heads=12, num_key_value_heads=12,
                               max_position_embeddings=256, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _train(tmp_path, model, *extra):
    nvme, runs = tmp_path / "nvme", tmp_path / "runs"
    nvme.mkdir()
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", "--model", str(model), "--data", "sample",
                        "--stage", "3", "--offload-optimizer", "nvme", "--offload-params", "nvme", "--nvme-path",
                        str(nvme), "--precision", "bf16", "--grad-ckpt", "--micro-batch", "2", "--seq-len", "64",
                        "--max-steps", "4", "--log-interval", "1", "--save-interval", "0", "--save-minutes", "0",
                        "--eval-fraction", "0", "--no-save-final", "--max-samples", "40", "--ds-overrides", SWAP_ALL,
                        "--runs-dir", str(runs), "--foreground", *extra],
                       check=False, capture_output=True, text=True, timeout=900)
    (paths,) = [RunPaths(p) for p in runs.iterdir()]
    return r, paths


def test_every_weight_swapped_trains_with_zerotuis_reuse_distance(tmp_path, model):
    r, paths = _train(tmp_path, model)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    ds = json.loads(paths.ds_config.read_text())["zero_optimization"]
    assert ds["stage3_max_reuse_distance"] == 0 and ds["offload_param"]["max_in_cpu"] == 0
    steps = [json.loads(line) for line in paths.events.read_text().splitlines() if '"type":"step"' in line]
    assert [e["step"] for e in steps] == [1, 2, 3, 4]


def test_deepspeeds_reuse_distance_runs_out_of_swap_buffers_and_the_end_says_what_to_change(tmp_path, model):
    r, paths = _train(tmp_path, model, "--stage3-max-reuse-distance", "1000000000")
    assert r.returncode == 1
    status = json.loads(paths.status.read_text())
    assert status["state"] == "failed" and "Not enough buffers 0 for swapping 1" in status["reason"]
    assert "this plan sets stage3_max_reuse_distance 1000000000" in status["reason"]
    assert "--stage3-max-reuse-distance 0" in status["reason"] and "resume" not in status["reason"]
