"""`zerotui estimate` and `zerotui fit` from the command line: JSON contract, readable text, and bad
input as one line on stderr with exit code 2."""
from __future__ import annotations

import json

import pytest
from cli_capture import run


def test_estimate_json_has_the_documented_keys(capsys):
    code, out, err = run(capsys, "estimate", "--model", "llama-2-7b", "--method", "lora", "--gpu-mem", "24GiB",
                         "--ram", "64GiB", "--json")
    assert code == 0, err
    data = json.loads(out)
    for key in ("gpu_bytes", "gpu_allocated_bytes", "cpu_bytes", "nvme_bytes", "fits", "breakdown",
                "deepspeed_estimate"):
        assert key in data
    assert isinstance(data["gpu_bytes"], int) and isinstance(data["fits"], bool)
    assert data["gpu_capacity"] == 24 * 2**30 and data["hardware"]["gpus"] == 1
    assert set(data["breakdown"]) == {"gpu", "cpu", "nvme"}
    assert data["gpu_bytes"] == sum(data["breakdown"]["gpu"].values())
    assert data["deepspeed_estimate"]["function"] == "estimate_zero2_model_states_mem_needs"


def test_estimate_text_is_a_table(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-2-7b", "--stage", "3", "--offload-optimizer", "cpu",
                       "--offload-params", "cpu", "--gpu-mem", "24GiB", "--ram", "256GiB", "--grad-ckpt")
    assert code == 0
    assert "GPU (per GPU)" in out and "host RAM (per node)" in out and "activations" in out
    assert "fits this machine" in out


def test_stated_gpus_follow_the_plan(capsys):
    code, out, _ = run(capsys, "estimate", "--model", "llama-2-13b", "--stage", "3", "--gpus", "4",
                       "--gpu-mem", "40GiB", "--json")
    data = json.loads(out)
    assert data["world_size"] == 4
    assert code == (0 if data["fits"] else 3)  # the exit code is the verdict


@pytest.mark.parametrize("argv,needle", [
    (["estimate", "--model", "llama-9b"], "not a known architecture"),
    (["estimate", "--model", "llama-2-7b", "--stage", "2", "--offload-params", "cpu"], "needs stage 3"),
    # DeepSpeed's stages 1-2 would keep an "nvme" optimizer in host RAM (tests/unit/test_nvme_swap.py)
    (["estimate", "--model", "llama-2-7b", "--stage", "2", "--offload-optimizer", "nvme", "--nvme-path", "/tmp"],
     "offload_optimizer=nvme needs stage 3"),
    # DeepSpeed's optimizer swap takes four buffers at once; with 2 or 3 a run failed at its first step
    (["estimate", "--model", "llama-2-7b", "--stage", "3", "--offload-optimizer", "nvme", "--nvme-path", "/tmp",
      "--offload-buffer-count", "3"], "offload_buffer_count=3 is too few for the optimizer on NVMe"),
    (["estimate", "--model", "llama-2-7b", "--gpus", "0"], "gpus"),
    (["estimate", "--model", "llama-2-7b", "--gpu-mem", "24XB"], "--gpu-mem"),
    (["estimate", "--model", "llama-2-7b", "--ram", "lots"], "--ram"),
    (["estimate", "--model", "tiny", "--method", "lora", "--lora-targets", "qkv"], "qkv"),
    (["fit", "--model", "llama-9b", "--gpu-mem", "24GiB"], "not a known architecture"),
    (["fit", "--model", "tiny", "--top", "0"], "--top"),
    (["estimate", "--model", "llama-2-7b", "--stage", "5"], "--stage"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_fit_lists_fastest_first_and_json(capsys):
    code, out, _ = run(capsys, "fit", "--model", "llama-2-7b", "--method", "lora", "--micro-batch", "8",
                       "--grad-accum", "2", "--seq-len", "2048", "--gpu-mem", "24GiB", "--ram", "64GiB")
    assert code == 0 and out.startswith(tuple("0123456789"))
    assert "1. " in out and "use: " in out or "as asked" in out
    code, out, _ = run(capsys, "fit", "--model", "llama-2-7b", "--method", "lora", "--gpu-mem", "24GiB",
                       "--ram", "64GiB", "--json")
    data = json.loads(out)
    recs = data["recommendations"]
    assert recs and recs[0]["relative_speed"] >= 0.98
    assert all(r["budget"]["fits"] for r in recs)


def test_fit_when_nothing_fits_explains_and_exits_3_like_estimate(capsys):
    plan = ["--model", "llama-2-70b", "--gpu-mem", "24GiB", "--ram", "64GiB"]
    code, out, _ = run(capsys, "fit", *plan)
    assert code == 3  # estimate's "does not fit": 1 is kept for a machine that failed us
    assert "nothing fits" in out and "RAM" in out
    why = [line.strip() for line in out.splitlines()[1:]]
    code, out, _ = run(capsys, "fit", *plan, "--json")
    data = json.loads(out)
    assert code == 3 and data["recommendations"] == [] and data["why_nothing_fits"] == why
    assert run(capsys, "estimate", *plan)[0] == 3  # the same verdict from both commands
