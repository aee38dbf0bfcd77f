"""build_ds_config: every generated config is accepted by DeepSpeed's own parser, and each value lands
where DeepSpeed reads it.

How DeepSpeed's parser is used here: ``DeepSpeedConfig(config_dict)`` with no process group falls back to
a world size of 1 (its __init__ catches the failed ``dist.get_rank()``), so the matrix is parsed at world
size 1 in this process. Larger world sizes need DeepSpeed's ``mpu`` hook (an object with
``get_data_parallel_world_size()``, what Megatron passes), which DeepSpeed only consults once a real
process group exists; ``test_world_sizes_through_a_real_process_group`` starts one (gloo, one process) in
a subprocess (a few seconds; DeepSpeed loads its CPU comm op there) so no process group outlives it.
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import dataclass

import pytest

from zerotui.core.deepspeed import config as dsconfig
from zerotui.core.deepspeed.config import build_ds_config, merge_overrides
from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan

import deepspeed.runtime.config as deepspeed_config  # noqa: E402


def parse(cfg: dict):
    """DeepSpeed's own parser (world size 1: no process group in this process)."""
    return deepspeed_config.DeepSpeedConfig(json.loads(json.dumps(cfg)))  # through JSON, as the worker reads it


@dataclass
class Shape:
    """The two ModelSpec fields build_ds_config reads (core/model/spec.py's ModelSpec has them too)."""
    hidden_size: int
    largest_param_numel: int


LLAMA7B = Shape(hidden_size=4096, largest_param_numel=32000 * 4096)  # embedding: 131M elements > 1e8

OFFLOADS = [  # (stage, offload_optimizer, offload_params)
    (0, "none", "none"), (1, "none", "none"), (1, "cpu", "none"), (2, "none", "none"), (2, "cpu", "none"),
    (3, "none", "none"), (3, "cpu", "none"), (3, "cpu", "cpu"), (3, "nvme", "cpu"),
    (3, "nvme", "nvme"), (3, "none", "nvme"),
]
MATRIX = list(itertools.product(OFFLOADS, ["bf16", "fp16", "fp32"], ["full", "lora"], [None, LLAMA7B]))


@pytest.mark.parametrize("offload, precision, method, spec", MATRIX)
def test_matrix_is_accepted_and_values_land_where_deepspeed_reads_them(offload, precision, method, spec):
    stage, opt, params = offload
    plan = Plan(stage=stage, offload_optimizer=opt, offload_params=params, precision=precision, method=method,
                nvme_path="/mnt/nvme/swap" if "nvme" in (opt, params) else None, micro_batch=2, grad_accum=8,
                grad_clip=0.5, grad_ckpt=True)
    cfg = build_ds_config(plan, 1, spec)
    ds = parse(cfg)
    assert (ds.train_batch_size, ds.train_micro_batch_size_per_gpu, ds.gradient_accumulation_steps) == (16, 2, 8)
    assert ds.gradient_clipping == 0.5
    assert ds.zero_optimization_stage == stage
    assert ds.float16_config.enabled == (precision == "fp16")
    assert ds.bfloat16_config.enabled == (precision == "bf16")
    assert ds.optimizer_name == "adamw" and ds.optimizer_params["lr"] == plan.lr
    assert ds.scheduler_name is None  # the engine owns the schedule
    zero = ds.zero_config
    if opt == "none":
        assert zero.offload_optimizer is None
    else:
        assert zero.offload_optimizer.device == opt
        assert zero.offload_optimizer.pin_memory is True
        if opt == "nvme":
            assert str(zero.offload_optimizer.nvme_path) == "/mnt/nvme/swap"
    if params == "none":
        assert zero.offload_param is None
    else:
        assert zero.offload_param.device == params
        if params == "nvme":
            assert zero.offload_param.buffer_size >= (spec.largest_param_numel if spec else 1)
    if "nvme" in (opt, params):
        assert ds.aio_config["block_size"] == 1_048_576
    if stage:
        assert zero.overlap_comm is True and zero.contiguous_gradients is True
    if stage == 3:
        assert zero.gather_16bit_weights_on_model_save == (method == "full")


def test_deepspeed_defaults_restated_in_dsconfig_match_deepspeed():
    """dsconfig writes DeepSpeed's defaults out explicitly; a DeepSpeed release that changes one fails here."""
    from deepspeed.runtime.swap_tensor.aio_config import AIO_DEFAULT_DICT
    from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
    from deepspeed.runtime.zero.offload_config import (DeepSpeedZeroOffloadOptimizerConfig,
                                                       DeepSpeedZeroOffloadParamConfig)

    z = DeepSpeedZeroConfig()
    assert dsconfig.DS_REDUCE_BUCKET_SIZE == z.reduce_bucket_size
    assert dsconfig.DS_ALLGATHER_BUCKET_SIZE == z.allgather_bucket_size
    assert dsconfig.DS_PREFETCH_BUCKET_SIZE == z.prefetch_bucket_size
    assert dsconfig.DS_PARAM_PERSISTENCE_THRESHOLD == z.param_persistence_threshold
    assert dsconfig.DS_MAX_LIVE_PARAMETERS == z.max_live_parameters
    assert dsconfig.DS_MAX_REUSE_DISTANCE == z.max_reuse_distance
    assert dsconfig.DS_SUB_GROUP_SIZE == z.sub_group_size
    assert dsconfig.DS_OPTIMIZER_BUFFER_COUNT == DeepSpeedZeroOffloadOptimizerConfig().buffer_count
    assert dsconfig.DS_PARAM_BUFFER_COUNT == DeepSpeedZeroOffloadParamConfig().buffer_count
    assert dsconfig.DS_PARAM_BUFFER_SIZE == DeepSpeedZeroOffloadParamConfig().buffer_size
    assert dsconfig.DS_PARAM_MAX_IN_CPU == DeepSpeedZeroOffloadParamConfig().max_in_cpu
    assert dsconfig.DS_AIO_DEFAULTS == AIO_DEFAULT_DICT


def test_bucket_sizes_follow_the_hf_convention_with_a_model():
    zero = parse(build_ds_config(Plan(stage=3), 1, LLAMA7B)).zero_config
    h = 4096
    assert zero.reduce_bucket_size == h * h
    assert zero.prefetch_bucket_size == int(0.9 * h * h)
    assert zero.param_persistence_threshold == 10 * h
    zero2 = parse(build_ds_config(Plan(stage=2), 1, LLAMA7B)).zero_config
    assert zero2.reduce_bucket_size == zero2.allgather_bucket_size == h * h


def test_without_a_model_deepspeed_defaults_are_written():
    zero = build_ds_config(Plan(stage=3), 1)["zero_optimization"]
    assert zero["reduce_bucket_size"] == 500_000_000
    assert zero["stage3_prefetch_bucket_size"] == 50_000_000
    assert zero["stage3_param_persistence_threshold"] == 100_000


def test_an_explicit_plan_value_always_wins():
    plan = Plan(stage=3, reduce_bucket_size=123, stage3_prefetch_bucket_size=456,
                stage3_param_persistence_threshold=0, stage3_max_live_parameters=789, sub_group_size=1000)
    zero = parse(build_ds_config(plan, 1, LLAMA7B)).zero_config
    assert (zero.reduce_bucket_size, zero.prefetch_bucket_size, zero.param_persistence_threshold,
            zero.max_live_parameters, zero.sub_group_size) == (123, 456, 0, 789, 1000)


def test_nvme_param_buffer_holds_the_largest_weight():
    plan = Plan(stage=3, offload_params="nvme", nvme_path="/nvme")
    assert build_ds_config(plan, 1)["zero_optimization"]["offload_param"]["buffer_size"] == 100_000_000
    big = build_ds_config(plan, 1, LLAMA7B)["zero_optimization"]["offload_param"]
    assert big["buffer_size"] == 32000 * 4096
    assert big["buffer_count"] == 5
    with pytest.raises(PlanError, match="offload_buffer_size=1000 is smaller"):
        build_ds_config(plan.with_changes(offload_buffer_size=1000), 1, LLAMA7B)
    chosen = build_ds_config(plan.with_changes(offload_buffer_size=2 * 10**8, offload_buffer_count=7), 1, LLAMA7B)
    assert chosen["zero_optimization"]["offload_param"]["buffer_size"] == 2 * 10**8
    assert chosen["zero_optimization"]["offload_param"]["buffer_count"] == 7


def test_fp16_loss_scaling_settings_land_in_deepspeed():
    plan = Plan(precision="fp16", fp16_initial_scale_power=12, fp16_loss_scale_window=250, fp16_hysteresis=4,
                fp16_min_loss_scale=2)
    fp16 = parse(build_ds_config(plan, 1)).float16_config
    assert fp16.loss_scale == 0  # dynamic
    assert (fp16.initial_scale_power, fp16.loss_scale_window, fp16.hysteresis, fp16.min_loss_scale) == (12, 250, 4, 2)


def test_fractional_min_loss_scale_is_refused_before_deepspeed_sees_it():
    # DeepSpeedFP16Config.min_loss_scale is an int; the Plan field accepts floats.
    with pytest.raises(PlanError, match="fp16_min_loss_scale=0.5"):
        build_ds_config(Plan(precision="fp16", fp16_min_loss_scale=0.5), 1)
    build_ds_config(Plan(precision="bf16", fp16_min_loss_scale=0.5), 1)  # irrelevant without fp16


def test_optimizer_is_adamw_with_the_plan_values():
    plan = Plan(lr=3e-4, adam_beta1=0.8, adam_beta2=0.95, adam_eps=1e-6, weight_decay=0.1)
    ds = parse(build_ds_config(plan, 1))
    assert ds.optimizer_params == {"lr": 3e-4, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.1}


def test_monitors_only_when_asked_and_inside_the_run_dir(tmp_path):
    assert not ({"tensorboard", "csv_monitor", "wandb"} & set(build_ds_config(Plan(), 1)))
    plan = Plan(tensorboard=True, csv_log=True, wandb=True, name="demo")
    mon = parse(build_ds_config(plan, 1, run_dir=tmp_path)).monitor_config
    assert mon.tensorboard.enabled and mon.tensorboard.output_path == str(tmp_path / "tensorboard")
    assert mon.csv_monitor.enabled and mon.csv_monitor.output_path == str(tmp_path / "csv")
    assert mon.wandb.enabled and mon.wandb.project == "zerotui" and mon.wandb.group == "demo"


def test_logging_knobs_keep_deepspeed_quiet():
    ds = parse(build_ds_config(Plan(), 1))
    assert ds.steps_per_print >= 2**31 - 1 and ds.wall_clock_breakdown is False


def test_train_batch_scales_with_world_size():
    plan = Plan(micro_batch=1, grad_accum=64)
    assert build_ds_config(plan, 8)["train_batch_size"] == 512
    with pytest.raises(PlanError):
        build_ds_config(plan, 0)


def test_overrides_merge_nested_and_null_removes():
    plan = Plan(stage=3, ds_overrides={"zero_optimization": {"stage3_max_live_parameters": 5, "round_robin_gradients": True},
                                       "wall_clock_breakdown": True, "activation_checkpointing": None,
                                       "flops_profiler": {"enabled": False}}, grad_ckpt=True)
    cfg = build_ds_config(plan, 1)
    assert cfg["zero_optimization"]["stage3_max_live_parameters"] == 5
    assert cfg["zero_optimization"]["stage"] == 3 and cfg["zero_optimization"]["overlap_comm"] is True  # kept
    assert "activation_checkpointing" not in cfg
    ds = parse(cfg)
    assert ds.zero_config.max_live_parameters == 5 and ds.zero_config.round_robin_gradients is True
    assert ds.wall_clock_breakdown is True


@pytest.mark.parametrize("override, option", [
    ({"train_batch_size": 64}, "--micro-batch"),
    ({"gradient_accumulation_steps": 2}, "--grad-accum"),
    ({"zero_optimization": {"stage": 1}}, "--stage"),
    ({"bf16": {"enabled": False}}, "--precision"),
    ({"scheduler": {"type": "WarmupLR"}}, "--lr-schedule"),
])
def test_overrides_cannot_change_what_the_plan_owns(override, option):
    with pytest.raises(PlanError, match=option):
        build_ds_config(Plan(ds_overrides=override), 1)


def test_merge_overrides_leaves_its_inputs_alone():
    base = {"a": {"b": 1, "c": 2}}
    out = merge_overrides(base, {"a": {"b": None, "d": 3}, "e": [1]})
    assert out == {"a": {"c": 2, "d": 3}, "e": [1]} and base == {"a": {"b": 1, "c": 2}}


WORLD_SCRIPT = r"""
import json, os, socket, sys
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
from zerotui.core.deepspeed.opbuild import put_interpreter_bin_on_path
put_interpreter_bin_on_path()  # the shm op builds with the venv's ninja, as in the engine
import deepspeed, torch
from deepspeed.runtime.config import DeepSpeedConfig
from zerotui.core.deepspeed.config import build_ds_config
from zerotui.core.plan.presets import load_preset

class DataParallel:  # DeepSpeed's mpu hook: it asks only for the data-parallel world size
    def __init__(self, n): self.n = n
    def get_data_parallel_world_size(self): return self.n

deepspeed.init_distributed(dist_backend="gloo")
out = {}
for world in (2, 4, 8):
    plan = load_preset("llama70b-lora-8gpu-zero3")
    ds = DeepSpeedConfig(build_ds_config(plan, world), mpu=DataParallel(world))
    out[world] = [ds.world_size, ds.train_batch_size]
    try:
        DeepSpeedConfig(build_ds_config(plan, world), mpu=DataParallel(world + 1))
        out[f"{world}+1"] = "accepted"
    except AssertionError:
        out[f"{world}+1"] = "refused"
torch.distributed.destroy_process_group()
print("RESULT " + json.dumps(out))
"""


def test_world_sizes_through_a_real_process_group():
    r = subprocess.run([sys.executable, "-c", WORLD_SCRIPT], capture_output=True, text=True, timeout=600)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, r.stdout[-2000:] + r.stderr[-2000:]
    out = json.loads(line[len("RESULT "):])
    assert out["2"] == [2, 128] and out["4"] == [4, 256] and out["8"] == [8, 512]
    # The same config under a different world size is refused: train_batch_size really is tied to it.
    assert out["2+1"] == out["4+1"] == out["8+1"] == "refused"
