"""Plan -> the ds_config dict DeepSpeed gets.

Everything a user would otherwise copy from the well-known recipes (the DeepSpeed config docs, the HF
Trainer templates ``ds_config_zero2.json`` / ``ds_config_zero3.json``) is written out explicitly, so an
exported ``ds_config.json`` shows every number that matters and can be tuned by hand.

This module does not import DeepSpeed (the wizard previews the config and must stay fast); the numbers
below that restate DeepSpeed defaults are checked against DeepSpeed's own config models in
``tests/unit/test_dsconfig.py``, so a DeepSpeed release that changes them fails a test instead of drifting.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Optional

from zerotui.core.deepspeed.nvme_swap import swap_dir
from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan

# -- DeepSpeed's defaults (deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig; offload_config.py) -----
DS_REDUCE_BUCKET_SIZE = 500_000_000          # reduce_bucket_size = pp_int(5e8)
DS_ALLGATHER_BUCKET_SIZE = 500_000_000       # allgather_bucket_size = pp_int(5e8)
DS_PREFETCH_BUCKET_SIZE = 50_000_000         # stage3_prefetch_bucket_size = pp_int(5e7)
DS_PARAM_PERSISTENCE_THRESHOLD = 100_000     # stage3_param_persistence_threshold = pp_int(1e5)
DS_MAX_LIVE_PARAMETERS = 1_000_000_000       # stage3_max_live_parameters = pp_int(1e9)
DS_MAX_REUSE_DISTANCE = 1_000_000_000        # stage3_max_reuse_distance = pp_int(1e9)
DS_SUB_GROUP_SIZE = 1_000_000_000            # sub_group_size = pp_int(1e9)
#: sub_group_size for a plan with the optimizer on NVMe. Each rank's host RAM holds 28 bytes per element
#: of the largest sub-group there (four page-locked fp32 swap buffers, an fp32 gradient buffer, and CPU
#: Adam's first-step moments: core/estimate/host.py): 26 GiB at DeepSpeed's 1e9, 2.6 GiB at 1e8, 16 of
#: those bytes locked, which RLIMIT_MEMLOCK must allow (core/deepspeed/memlock.py).
NVME_SUB_GROUP_SIZE = 100_000_000
#: stage3_max_reuse_distance for a plan with its weights on NVMe. DeepSpeed keeps a gathered weight, and the
#: swap buffer its partition was read into, while the weight is used again within this many elements;
#: every weight is (in backward), so from the second step, when the read-ahead runs, the five buffers
#: stay taken and a weight read ahead of none fails "Not enough buffers 0 for swapping 1" (DeepSpeed
#: 0.19.8; on the CPU with max_in_cpu 0, and on the H200's 1.1B run). With 0 each weight and its
#: buffer go after use: the same CPU plan trains (docs/nvme_offload.md, "Weights on NVMe").
NVME_PARAMS_REUSE_DISTANCE = 0
DS_OPTIMIZER_BUFFER_COUNT = 4                # DeepSpeedZeroOffloadOptimizerConfig.buffer_count
DS_PARAM_BUFFER_COUNT = 5                    # DeepSpeedZeroOffloadParamConfig.buffer_count
DS_PARAM_BUFFER_SIZE = 100_000_000           # DeepSpeedZeroOffloadParamConfig.buffer_size = pp_int(1e8)
DS_PARAM_MAX_IN_CPU = 1_000_000_000          # DeepSpeedZeroOffloadParamConfig.max_in_cpu = pp_int(1e9)

# The async-I/O block for NVMe swapping: deepspeed/runtime/swap_tensor/constants.py defaults, which the
# ZeRO-Infinity tutorial also uses. Written out so users can tune it (`ds_bench` suggests values per disk).
DS_AIO_DEFAULTS = {
    "block_size": 1_048_576,
    "queue_depth": 8,
    "intra_op_parallelism": 1,
    "single_submit": False,
    "overlap_events": True,
    "use_gds": False,
}

#: zerotui emits its own step events every log_interval; DeepSpeed's own console line would only
#: duplicate them in worker.log (and costs a device sync), so it is pushed out of reach.
STEPS_PER_PRINT_NEVER = 2**31 - 1

#: ds_config keys that the Plan owns: the engine builds its data loader, precision and ZeRO set-up from
#: the Plan, so an override here would make DeepSpeed and zerotui disagree about the run.
PLAN_OWNED_KEYS = {
    ("train_batch_size",): "--micro-batch and --grad-accum (train_batch_size is derived from them)",
    ("train_micro_batch_size_per_gpu",): "--micro-batch",
    ("gradient_accumulation_steps",): "--grad-accum",
    ("zero_optimization", "stage"): "--stage",
    ("fp16", "enabled"): "--precision",
    ("bf16", "enabled"): "--precision",
    # The engine runs the learning-rate schedule (see "No scheduler section" below).
    ("scheduler",): "--lr-schedule, --warmup-steps and --min-lr-ratio",
}


def bucket_sizes(plan: Plan, spec: Any = None) -> dict[str, int]:
    """The communication bucket sizes, in elements: the Plan's value, else sized from the model, else
    DeepSpeed's default.

    With a model, the sizes follow the convention the HF Trainer applies to ``"auto"`` values
    (transformers/integrations/deepspeed.py, ``HfTrainerDeepSpeedConfig.trainer_config_finalize``):
    reduce bucket h*h, stage-3 prefetch 0.9*h*h, persistence threshold 10*h, with h the hidden size.
    DeepSpeed's 5e8 defaults are gigabytes of buffers (docs/estimator.md) that a 24 GB card cannot spare.
    The all-gather bucket (stages 1-2) has no HF rule; zerotui gives it the reduce bucket's size, as it
    is the same kind of buffer and the estimator counts both. NVMe offload changes two of DeepSpeed's
    defaults: the optimizer's sub-group (``NVME_SUB_GROUP_SIZE``) and, with the weights there, the reuse
    distance (``NVME_PARAMS_REUSE_DISTANCE``).
    """
    h = int(getattr(spec, "hidden_size", 0) or 0) if spec is not None else 0
    model_reduce = h * h if h else None
    derived = {
        "reduce_bucket_size": model_reduce or DS_REDUCE_BUCKET_SIZE,
        "allgather_bucket_size": model_reduce or DS_ALLGATHER_BUCKET_SIZE,
        "stage3_prefetch_bucket_size": int(0.9 * h * h) if h else DS_PREFETCH_BUCKET_SIZE,
        "stage3_param_persistence_threshold": 10 * h if h else DS_PARAM_PERSISTENCE_THRESHOLD,
        "stage3_max_live_parameters": DS_MAX_LIVE_PARAMETERS,
        "stage3_max_reuse_distance": NVME_PARAMS_REUSE_DISTANCE if plan.offload_params == "nvme"
        else DS_MAX_REUSE_DISTANCE,
        "sub_group_size": NVME_SUB_GROUP_SIZE if plan.offload_optimizer == "nvme" else DS_SUB_GROUP_SIZE,
    }
    for key in derived:
        explicit = getattr(plan, key)
        if explicit is not None:  # an explicit Plan value always wins
            derived[key] = int(explicit)
    return derived


def param_buffer_size(plan: Plan, spec: Any = None) -> int:
    """Elements per NVMe parameter swap buffer. DeepSpeed asserts that every (partitioned) weight fits
    one buffer (partitioned_param_swapper.py: "More elements ... than buffer size"); a LLaMA-7B embedding
    has 32000 x 4096 = 131M elements, more than the 1e8 default, so the default is raised to the model's
    largest weight when the model is known."""
    largest = int(getattr(spec, "largest_param_numel", 0) or 0) if spec is not None else 0
    if plan.offload_buffer_size is not None:
        if largest and plan.offload_buffer_size < largest:
            raise PlanError(
                f"offload_buffer_size={plan.offload_buffer_size} is smaller than the model's largest weight "
                f"({largest} elements); DeepSpeed's NVMe parameter swap would fail",
                f"use --offload-buffer-size {largest} or more, or leave it unset")
        return plan.offload_buffer_size
    return max(DS_PARAM_BUFFER_SIZE, largest)


def _offload_optimizer(plan: Plan, run_dir: Optional[Path] = None) -> dict[str, Any]:
    block: dict[str, Any] = {"device": plan.offload_optimizer, "pin_memory": plan.pin_memory}
    if plan.offload_optimizer == "nvme":
        block.update(nvme_path=str(swap_dir(plan.nvme_path, run_dir)),
                     buffer_count=plan.offload_buffer_count or DS_OPTIMIZER_BUFFER_COUNT,
                     fast_init=False)
    return block


def _offload_param(plan: Plan, spec: Any, run_dir: Optional[Path] = None) -> dict[str, Any]:
    block: dict[str, Any] = {"device": plan.offload_params, "pin_memory": plan.pin_memory}
    if plan.offload_params == "nvme":
        block.update(nvme_path=str(swap_dir(plan.nvme_path, run_dir)),
                     buffer_count=plan.offload_buffer_count or DS_PARAM_BUFFER_COUNT,
                     buffer_size=param_buffer_size(plan, spec))
    return block


def zero_section(plan: Plan, spec: Any = None, run_dir: Optional[Path] = None) -> dict[str, Any]:
    """The ``zero_optimization`` block: only the keys the chosen stage reads. NVMe offload swaps into
    the run's own folder inside ``nvme_path`` (``nvme_swap.swap_dir``) where ``run_dir`` is given."""
    if plan.stage == 0:
        return {"stage": 0}
    sizes = bucket_sizes(plan, spec)
    zero: dict[str, Any] = {
        "stage": plan.stage,
        "overlap_comm": plan.overlap_comm,
        "contiguous_gradients": plan.contiguous_gradients,
        "reduce_bucket_size": sizes["reduce_bucket_size"],
    }
    if plan.stage in (1, 2):
        zero.update(reduce_scatter=True, allgather_partitions=True,
                    allgather_bucket_size=sizes["allgather_bucket_size"])
    else:
        zero.update(
            stage3_prefetch_bucket_size=sizes["stage3_prefetch_bucket_size"],
            stage3_param_persistence_threshold=sizes["stage3_param_persistence_threshold"],
            stage3_max_live_parameters=sizes["stage3_max_live_parameters"],
            stage3_max_reuse_distance=sizes["stage3_max_reuse_distance"],
            sub_group_size=sizes["sub_group_size"],
            # Lets engine.save_16bit_model() gather a full fine-tune's weights for final/. A LoRA run
            # saves only its small adapters (gathered on their own), so the 16-bit base is never
            # gathered: for a 70B model that would need ~140 GB of host RAM on rank 0.
            stage3_gather_16bit_weights_on_model_save=plan.method == "full",
        )
    if plan.offload_optimizer != "none":
        zero["offload_optimizer"] = _offload_optimizer(plan, run_dir)
    if plan.offload_params != "none":
        zero["offload_param"] = _offload_param(plan, spec, run_dir)
    return zero


def precision_sections(plan: Plan) -> dict[str, Any]:
    if plan.precision == "fp16":
        # DeepSpeedFP16Config.min_loss_scale is an int (runtime/precision_config.py): 0.5 is refused there.
        if plan.fp16_min_loss_scale != int(plan.fp16_min_loss_scale):
            raise PlanError(f"fp16_min_loss_scale={plan.fp16_min_loss_scale} must be a whole number for DeepSpeed",
                            "use --fp16-min-loss-scale 1 (the default) or another integer >= 1")
        return {"fp16": {
            "enabled": True,
            "loss_scale": 0,  # 0 = dynamic loss scaling (DeepSpeedFP16Config.loss_scale)
            "initial_scale_power": plan.fp16_initial_scale_power,
            "loss_scale_window": plan.fp16_loss_scale_window,
            "hysteresis": plan.fp16_hysteresis,
            "min_loss_scale": int(plan.fp16_min_loss_scale),
        }}
    if plan.precision == "bf16":
        return {"bf16": {"enabled": True}}
    return {}  # fp32: neither section, DeepSpeed trains in the model's dtype


def optimizer_section(plan: Plan) -> dict[str, Any]:
    """AdamW. DeepSpeed builds it: FusedAdam on the GPU, DeepSpeedCPUAdam when offload_optimizer is set
    (engine._configure_basic_optimizer; zero_force_ds_cpu_optimizer defaults to true)."""
    return {"type": "AdamW", "params": {
        "lr": plan.lr,
        "betas": [plan.adam_beta1, plan.adam_beta2],
        "eps": plan.adam_eps,
        "weight_decay": plan.weight_decay,
    }}


# No scheduler section, on purpose: the engine owns the learning-rate schedule. DeepSpeed's built-ins
# cannot express the Plan's schedule exactly: WarmupLR / WarmupCosineLR reject warmup_num_steps=0 and
# round 1 up to 2 (lr_schedules.py: max(2, warmup_num_steps)); WarmupDecayLR always decays to 0, not to
# lr x min_lr_ratio; and all need total_num_steps, which for an epoch-based plan is known only after the
# data is tokenised. One owner also rules out a schedule being stepped twice.


def monitor_sections(plan: Plan, run_dir: Optional[Path] = None) -> dict[str, Any]:
    """DeepSpeed monitor blocks the Plan asks for. Since DeepSpeed 0.18.3 the engine no longer writes the
    training loss to them itself, so zerotui's engine writes through ``engine.monitor``."""
    out: dict[str, Any] = {}
    base = Path(run_dir) if run_dir is not None else None
    if plan.tensorboard:
        out["tensorboard"] = {"enabled": True, "job_name": plan.name,
                              "output_path": str(base / "tensorboard") if base else "tensorboard"}
    if plan.csv_log:
        out["csv_monitor"] = {"enabled": True, "job_name": plan.name,
                              "output_path": str(base / "csv") if base else "csv"}
    if plan.wandb:
        out["wandb"] = {"enabled": True, "project": "zerotui", "group": plan.name}
    return out


def merge_overrides(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """JSON Merge Patch (RFC 7386): objects merge recursively, ``null`` removes a key, anything else
    replaces. ``base`` is not modified."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_overrides(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def check_owned_keys(overrides: dict[str, Any]) -> None:
    """PlanError when ``overrides`` set a key the Plan derives, or name an optimizer DeepSpeed cannot build."""
    for path, option in PLAN_OWNED_KEYS.items():
        node: Any = overrides
        for part in path:
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            raise PlanError(f"ds_overrides sets {'.'.join(path)}, which zerotui derives from the plan",
                            f"use {option} instead")
    opt = overrides.get("optimizer")
    name = opt.get("type") if isinstance(opt, dict) else None
    if name is not None and not _known_optimizer(name):
        raise PlanError(f"ds_overrides.optimizer.type {name!r} is not an optimizer DeepSpeed can build",
                        f"use one of {', '.join(DEEPSPEED_OPTIMIZER_NAMES)} or a torch.optim class name")


#: What DeepSpeed builds itself (deepspeed/runtime/config.py DEEPSPEED_OPTIMIZERS, 0.19.8); any other name
#: must be a torch.optim class (engine.py `_supported_optims`), else initialize() fails after the model
#: has loaded — minutes into a run. Checked here so the plan is refused up front.
DEEPSPEED_OPTIMIZER_NAMES = ("adagrad", "adam", "adamw", "lamb", "muadam", "muadamw", "musgd", "lion", "muon")


def _known_optimizer(name: Any) -> bool:
    if not isinstance(name, str):
        return False
    if name.lower() in DEEPSPEED_OPTIMIZER_NAMES:
        return True
    import torch  # only for an unusual name: keeps the wizard's config preview free of torch

    return getattr(torch.optim, name, None) is not None


def build_ds_config(plan: Plan, world_size: int, spec: Any = None,
                    run_dir: Optional[Path] = None) -> dict[str, Any]:
    """The ds_config for ``plan`` run by ``world_size`` processes.

    ``spec`` (a ``ModelSpec``, or None) sizes the buckets from the model; without it DeepSpeed's defaults
    are written. ``run_dir`` places the monitor output folders (relative folders without it) and NVMe
    offload's swap folder (the plan's ``nvme_path`` itself without it).
    ``plan.ds_overrides`` is merged last (RFC 7386 merge patch), except keys the Plan owns.
    """
    if world_size < 1:
        raise PlanError(f"world size must be at least 1 (got {world_size})", "use --gpus N with N >= 1")
    cfg: dict[str, Any] = {
        "train_batch_size": plan.sequences_per_step(world_size),
        "train_micro_batch_size_per_gpu": plan.micro_batch,
        "gradient_accumulation_steps": plan.grad_accum,
        "gradient_clipping": plan.grad_clip,
        **precision_sections(plan),
        "zero_optimization": zero_section(plan, spec, run_dir),
        "optimizer": optimizer_section(plan),
        "steps_per_print": STEPS_PER_PRINT_NEVER,
        "wall_clock_breakdown": False,
    }
    if plan.uses_nvme():
        cfg["aio"] = dict(DS_AIO_DEFAULTS)
    if plan.grad_ckpt:
        # Hugging Face models checkpoint through their own gradient_checkpointing_enable(), which the
        # engine calls; this block configures deepspeed.checkpointing for code that routes through it
        # (Megatron-style models) and records the choice in the exported file.
        cfg["activation_checkpointing"] = {
            "partition_activations": False,
            "cpu_checkpointing": False,
            "contiguous_memory_optimization": False,
            "number_checkpoints": None,
            "synchronize_checkpoint_boundary": False,
            "profile": False,
        }
    cfg.update(monitor_sections(plan, run_dir))
    if plan.ds_overrides:
        check_owned_keys(plan.ds_overrides)
        cfg = merge_overrides(cfg, plan.ds_overrides)
    return cfg
