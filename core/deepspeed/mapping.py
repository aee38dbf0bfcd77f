"""How each section of a ds_config.json maps onto Plan fields, and what cannot carry over.

Used by ``dsimport.import_ds_config``: ``ConfigMapper(cfg, world_size).run()`` fills ``fields`` (Plan fields),
``keep`` (DeepSpeed settings to keep verbatim in ds_overrides), ``warnings`` and ``dropped``. Which keys
DeepSpeed knows comes from DeepSpeed itself (``dskeys``).
"""
from __future__ import annotations

import copy
import difflib
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from zerotui.core.plan.schema import Plan

_BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
#: zero_optimization key -> Plan field (both spellings DeepSpeed accepts for the stage-3 ones).
_ZERO_FIELDS = {
    "stage": "stage", "overlap_comm": "overlap_comm", "contiguous_gradients": "contiguous_gradients",
    "reduce_bucket_size": "reduce_bucket_size", "allgather_bucket_size": "allgather_bucket_size",
    "sub_group_size": "sub_group_size",
    **{f"{pre}{k}": f"stage3_{k}" for pre in ("stage3_", "") for k in (
        "prefetch_bucket_size", "param_persistence_threshold", "max_live_parameters", "max_reuse_distance")},
}
_FP16_FIELDS = {"initial_scale_power": "fp16_initial_scale_power", "loss_scale_window": "fp16_loss_scale_window",
                "hysteresis": "fp16_hysteresis", "min_loss_scale": "fp16_min_loss_scale"}
_SCHEDULES = {"WarmupLR": "constant", "WarmupDecayLR": "linear", "WarmupCosineLR": "cosine"}
#: Adam parameters DeepSpeed's FusedAdam and DeepSpeedCPUAdam both take, which the Plan does not hold.
_ADAM_KEEP = {"torch_adam", "bias_correction"}

def _is_auto(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "auto"


class ConfigMapper:
    def __init__(self, cfg: dict[str, Any], world_size: int) -> None:
        from zerotui.core.deepspeed import keys as dskeys

        self.dskeys = dskeys
        self.cfg, self.world = cfg, world_size
        self.fields: dict[str, Any] = {}
        self.keep: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.dropped: list[str] = []

    # -- bookkeeping ------------------------------------------------------------------------------
    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def drop(self, key: str, why: str) -> None:
        self.dropped.append(f"{key}: {why}")

    def auto(self, key: str, filled_by: str) -> None:
        self.warn(f"{key} is \"auto\", an HF Trainer placeholder DeepSpeed itself cannot read; {filled_by}")

    def set_field(self, key: str, name: str, value: Any) -> None:
        if _is_auto(value):
            self.auto(key, "zerotui fills it from the plan" + (" and the model" if "bucket" in name or "persistence" in name else ""))
            return
        info = Plan.model_fields[name]
        try:
            value = TypeAdapter(Annotated[info.annotation, info]).validate_python(value)
        except ValidationError as err:
            msg = err.errors()[0].get("msg", "invalid").replace("Input should be", "must be")
            self.warn(f"{key}={value!r} cannot be used ({msg}); the plan keeps {name}={getattr(Plan(), name)!r}")
            self.drop(key, "invalid value")
            return
        self.fields[name] = value

    def keep_value(self, path: tuple[str, ...], value: Any) -> None:
        if _is_auto(value):
            self.auto(".".join(path), "it was dropped; set it in ds_overrides if you need it")
            self.drop(".".join(path), "\"auto\"")
            return
        node = self.keep
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = copy.deepcopy(value)

    def unknown(self, key: str, known: Any, ignored_silently: bool) -> None:
        leaf = key.rsplit(".", 1)[-1]
        close = difflib.get_close_matches(leaf, sorted(known), n=2, cutoff=0.6)
        effect = ("DeepSpeed ignores it silently, so it never did anything" if ignored_silently
                  else "DeepSpeed would refuse the config")
        self.warn(f"unknown key '{key}': this DeepSpeed does not know it ({effect})"
                  + (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""))
        self.drop(key, "unknown to DeepSpeed")

    def keep_section(self, name: str, value: Any) -> None:
        """Keep a DeepSpeed section the Plan has no fields for, minus unknown and "auto" sub-keys."""
        known = self.dskeys.known_section_keys(name)
        if isinstance(value, dict) and known is not None:
            for k, v in value.items():
                if k in known:
                    self.keep_value((name, k), v)
                else:
                    self.unknown(f"{name}.{k}", known,
                                 ignored_silently=not self.dskeys.refuses_unknown_keys(name))
        else:
            self.keep_value((name,), value)

    # -- sections ---------------------------------------------------------------------------------
    def run(self) -> None:
        known, removed = self.dskeys.known_top_level_keys(), self.dskeys.removed_keys()
        handlers = {"zero_optimization": self.zero, "optimizer": self.optimizer, "scheduler": self.scheduler,
                    "activation_checkpointing": self.act_ckpt, "gradient_clipping": self.clipping}
        for key, value in self.cfg.items():
            if key in removed:
                self.warn(f"'{key}': {removed[key].split('. ')[0]} (DeepSpeed would refuse the config)")
                self.drop(key, "removed from DeepSpeed")
            elif key not in known:
                self.unknown(key, known, ignored_silently=True)
            elif key in _BATCH_KEYS or key in ("fp16", "bf16", "bfloat16"):
                continue  # handled together below: they depend on each other
            elif key in handlers:
                handlers[key](value)
            elif key in ("tensorboard", "csv_monitor", "wandb"):
                self.monitor(key, value)
            elif key == "steps_per_print":
                self.drop(key, "zerotui prints its own step lines every log_interval steps")
            else:
                self.keep_section(key, value)
        self.batch()
        self.precision()

    def clipping(self, value: Any) -> None:
        self.set_field("gradient_clipping", "grad_clip", value)

    def batch(self) -> None:
        vals = {}
        for key in _BATCH_KEYS:
            v = self.cfg.get(key)
            if _is_auto(v):
                self.auto(key, "zerotui derives it from --micro-batch and --grad-accum")
                v = None
            elif v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 1):
                self.warn(f"{key}={v!r} is not a positive whole number; ignored")
                self.drop(key, "invalid value")
                v = None
            vals[key] = int(v) if v is not None else None
        tb, mb, ga = vals["train_batch_size"], vals["train_micro_batch_size_per_gpu"], vals["gradient_accumulation_steps"]
        w = self.world
        if tb is not None and (mb is None or ga is None):
            # DeepSpeed fills the missing one the same way (config.py, _set_batch_related_parameters).
            known = (mb or 1) * (ga or 1) * w
            if tb % known:
                self.warn(f"train_batch_size={tb} is not divisible by {known} (micro {mb or 1} × accumulation "
                          f"{ga or 1} × world size {w}); the plan keeps the other values")
            elif mb is None:
                mb, ga = tb // known, ga or 1
            else:
                ga = tb // known
        elif tb is not None and tb != mb * ga * w:
            fits = f"; it would fit a world size of {tb // (mb * ga)} (--gpus)" if tb % (mb * ga) == 0 else ""
            self.warn(f"train_batch_size={tb} conflicts with train_micro_batch_size_per_gpu × "
                      f"gradient_accumulation_steps × world size = {mb} × {ga} × {w} = {mb * ga * w} (world size "
                      f"{w} assumed; DeepSpeed would refuse this config); zerotui derives the global batch, so "
                      f"the plan keeps micro_batch={mb}, grad_accum={ga}{fits}")
            self.drop("train_batch_size", "derived by zerotui")
        if mb is not None:
            self.set_field("train_micro_batch_size_per_gpu", "micro_batch", mb)
        if ga is not None:
            self.set_field("gradient_accumulation_steps", "grad_accum", ga)

    def _enabled(self, section: str, value: Any) -> Any:
        """A quoted "true"/"yes"/"1" read as DeepSpeed's pydantic config reads it (true), and said so."""
        if not isinstance(value, str) or _is_auto(value):
            return value
        try:
            flag = TypeAdapter(bool).validate_python(value)
        except ValidationError:
            self.warn(f"{section}.enabled={value!r} is not true or false; read as false")
            return False
        self.warn(f"{section}.enabled is the string {value!r}; read as {str(flag).lower()}, as DeepSpeed does")
        return flag

    def precision(self) -> None:
        sections = {k: self.cfg[k] for k in ("fp16", "bf16", "bfloat16") if isinstance(self.cfg.get(k), dict)}
        for k in ("fp16", "bf16", "bfloat16"):
            if k in self.cfg and k not in sections:
                self.warn(f"{k} must be an object like {{\"enabled\": true}}; ignored")
                self.drop(k, "not an object")
        if "bf16" in sections and "bfloat16" in sections:
            self.drop("bfloat16", "DeepSpeed reads 'bf16' when both are present")
            sections.pop("bfloat16")
        on = {k: self._enabled(k, s.get("enabled", False)) for k, s in sections.items()}
        autos = [k for k, v in on.items() if _is_auto(v)]
        for k in autos:
            self.auto(f"{k}.enabled", f"the plan keeps precision={Plan().precision}; choose with --precision")
        fp16_on = on.get("fp16") is True
        bf16_on = on.get("bf16") is True or on.get("bfloat16") is True
        if fp16_on and bf16_on:
            self.warn("fp16 and bf16 are both enabled (DeepSpeed would refuse the config); the plan uses bf16")
            self.fields["precision"] = "bf16"
        elif fp16_on or bf16_on:
            self.fields["precision"] = "fp16" if fp16_on else "bf16"
        elif not autos:
            self.fields["precision"] = "fp32"
            self.warn("neither fp16 nor bf16 is enabled, so DeepSpeed trains in fp32 and the plan says "
                      "precision=fp32 (slow, most memory); choose bf16 or fp16 with --precision")
        known16 = self.dskeys.known_section_keys("fp16") or frozenset()
        for k, v in sections.get("fp16", {}).items():
            if k == "enabled":
                continue
            if k in _FP16_FIELDS:
                self.set_field(f"fp16.{k}", _FP16_FIELDS[k], v)
            elif k == "loss_scale" and v == 0:
                continue  # dynamic scaling: what zerotui writes anyway
            elif k in known16:
                self.keep_value(("fp16", k), v)
                if k == "loss_scale":
                    self.warn(f"fp16.loss_scale={v} is a static loss scale (kept); zerotui's loss-scale alarms "
                              "expect dynamic scaling (loss_scale 0)")
            else:
                self.unknown(f"fp16.{k}", known16, ignored_silently=False)
        for name in ("bf16", "bfloat16"):
            known_bf = self.dskeys.known_section_keys("bf16") or frozenset()
            for k, v in sections.get(name, {}).items():
                if k == "enabled":
                    continue
                if k in known_bf:
                    self.keep_value(("bf16", k), v)  # zerotui writes 'bf16', the current spelling
                else:
                    self.unknown(f"{name}.{k}", known_bf, ignored_silently=False)

    def zero(self, value: Any) -> None:
        if isinstance(value, bool):  # the pre-0.3 spelling: "zero_optimization": true meant stage 1
            self.warn("zero_optimization: true is DeepSpeed's deprecated form of stage 1; the plan uses stage 1")
            self.fields["stage"] = 1 if value else 0
            return
        if not isinstance(value, dict):
            self.warn("zero_optimization must be an object; ignored")
            self.drop("zero_optimization", "not an object")
            return
        known = self.dskeys.known_section_keys("zero_optimization") or frozenset()
        removed = self.dskeys.removed_keys()
        stage = value.get("stage", 0)
        for k, v in value.items():
            key = f"zero_optimization.{k}"
            if key in removed:
                self.warn(f"'{key}': {removed[key].split('; ')[0]} (DeepSpeed would refuse the config)")
                self.drop(key, "removed from DeepSpeed")
            elif k in _ZERO_FIELDS:
                self.set_field(key, _ZERO_FIELDS[k], v)
            elif k in ("offload_optimizer", "offload_param"):
                self.offload(k, v, stage)
            elif k in ("cpu_offload", "cpu_offload_param"):
                target = "offload_optimizer" if k == "cpu_offload" else "offload_params"
                self.warn(f"{key} is deprecated in DeepSpeed; the plan uses {target}={'cpu' if v else 'none'}")
                if v:
                    self.fields[target] = "cpu"
            elif k == "cpu_offload_use_pin_memory":
                self.set_field(key, "pin_memory", v)
            elif k in known:
                self.keep_value(("zero_optimization", k), v)
            else:
                self.unknown(key, known, ignored_silently=False)

    def offload(self, block: str, value: Any, stage: Any) -> None:
        key = f"zero_optimization.{block}"
        target = "offload_optimizer" if block == "offload_optimizer" else "offload_params"
        if value is None:
            return
        if not isinstance(value, dict):
            self.warn(f"{key} must be an object like {{\"device\": \"cpu\"}}; ignored")
            self.drop(key, "not an object")
            return
        device = value.get("device", "none")
        if block == "offload_param" and device != "none" and stage != 3:
            self.warn(f"{key} is used only by ZeRO stage 3 (this config has stage {stage}); dropped")
            self.drop(key, "needs stage 3")
            return
        known = self.dskeys.known_section_keys(key) or frozenset()
        self.set_field(f"{key}.device", target, device)
        for k, v in value.items():
            sub = f"{key}.{k}"
            if k == "device":
                continue
            if k in ("nvme_path", "pin_memory", "buffer_count") or (k == "buffer_size" and block == "offload_param"):
                name = {"buffer_count": "offload_buffer_count", "buffer_size": "offload_buffer_size"}.get(k, k)
                previous = self.fields.get(name)
                if previous is not None and previous != v and not _is_auto(v):
                    self.warn(f"{sub}={v!r} differs from the other offload block's {previous!r}; zerotui uses one "
                              f"{name} for both, so the plan keeps {previous!r}")
                    self.drop(sub, f"one {name} for both offload blocks")
                elif device == "nvme" or k == "pin_memory":
                    self.set_field(sub, name, v)
                else:
                    self.drop(sub, f"used only with device nvme (this block has {device})")
            elif k in known:
                self.keep_value(("zero_optimization", block, k), v)
            else:
                self.unknown(sub, known, ignored_silently=False)

    def optimizer(self, value: Any) -> None:
        if not isinstance(value, dict):
            self.warn("optimizer must be an object like {\"type\": \"AdamW\", \"params\": {...}}; ignored")
            self.drop("optimizer", "not an object")
            return
        kind = value.get("type", "")
        params = value.get("params") or {}
        if _is_auto(kind) or str(kind).lower() not in ("adam", "adamw"):
            if not _is_auto(kind):
                self.warn(f"optimizer type {kind!r}: zerotui trains with AdamW; the optimizer block was dropped")
            else:
                self.auto("optimizer.type", "zerotui uses AdamW")
            self.drop("optimizer", "zerotui trains with AdamW")
            return
        for k, v in (params.items() if isinstance(params, dict) else ()):
            sub = f"optimizer.params.{k}"
            if k == "lr":
                self.set_field(sub, "lr", v)
            elif k == "betas" and isinstance(v, (list, tuple)) and len(v) == 2:
                self.set_field(sub, "adam_beta1", v[0])
                self.set_field(sub, "adam_beta2", v[1])
            elif k == "betas" and _is_auto(v):
                self.auto(sub, "zerotui uses the plan's adam_beta1/adam_beta2")
            elif k == "betas":
                self.warn(f"{sub}={v!r} must be a pair like [0.9, 0.999]; ignored")
                self.drop(sub, "invalid value")
            elif k in ("eps", "weight_decay"):
                self.set_field(sub, "adam_eps" if k == "eps" else "weight_decay", v)
            elif k == "adam_w_mode" and v is False:
                self.warn(f"{sub}=false asks for plain Adam (L2 penalty); zerotui trains with AdamW (decoupled "
                          "weight decay)")
                self.drop(sub, "zerotui trains with AdamW")
            elif k == "max_grad_norm":
                self.warn(f"{sub} is not supported by DeepSpeed (it clips with the top-level gradient_clipping)")
                self.drop(sub, "use gradient_clipping / --grad-clip")
            elif k in _ADAM_KEEP:
                self.keep_value(("optimizer", "params", k), v)
            else:
                self.warn(f"{sub} is not a parameter of DeepSpeed's Adam; dropped")
                self.drop(sub, "not an Adam parameter")
        if "legacy_fusion" in value:
            self.keep_value(("optimizer", "legacy_fusion"), value["legacy_fusion"])

    def scheduler(self, value: Any) -> None:
        kind = value.get("type") if isinstance(value, dict) else None
        params = (value.get("params") if isinstance(value, dict) else None) or {}
        if kind not in _SCHEDULES or not isinstance(params, dict):
            self.warn(f"scheduler {kind!r} has no zerotui equivalent (warm-up then cosine, linear or constant); "
                      "the plan keeps its own schedule")
            self.drop("scheduler", "not expressible")
            return
        self.fields["lr_schedule"] = _SCHEDULES[kind]
        self.drop("scheduler", f"zerotui's engine runs the schedule itself (lr_schedule={_SCHEDULES[kind]})")
        if "warmup_num_steps" in params:
            self.set_field("scheduler.params.warmup_num_steps", "warmup_steps", params["warmup_num_steps"])
        if "total_num_steps" in params:
            self.set_field("scheduler.params.total_num_steps", "max_steps", params["total_num_steps"])
        if kind == "WarmupCosineLR":  # DeepSpeed's default end ratio is 1e-4 (lr_schedules.py)
            self.set_field("scheduler.params.cos_min_ratio", "min_lr_ratio", params.get("cos_min_ratio", 0.0001))
        max_lr = params.get("warmup_max_lr")
        if max_lr is not None and not _is_auto(max_lr):
            lr = self.fields.get("lr")
            if lr is None:
                self.set_field("scheduler.params.warmup_max_lr", "lr", max_lr)
            elif lr != max_lr:
                self.warn(f"scheduler.params.warmup_max_lr={max_lr} differs from optimizer lr={lr}; the plan uses {lr}")
        if params.get("warmup_min_lr", 0) not in (0, "auto") or params.get("warmup_min_ratio", 0) not in (0, "auto"):
            self.warn("the scheduler warms up from a non-zero rate; zerotui warms up from 0")
        if params.get("warmup_num_steps", 1000) and params.get("warmup_type", "log") != "linear":
            self.warn(f"{kind} warms up logarithmically (warmup_type 'log', DeepSpeed's default); zerotui warms up "
                      "linearly")

    def act_ckpt(self, value: Any) -> None:
        self.fields["grad_ckpt"] = True
        self.warn("activation_checkpointing block found: the plan turns on activation checkpointing (grad_ckpt); "
                  "its settings apply only to code using deepspeed.checkpointing and are kept")
        self.keep_section("activation_checkpointing", value)

    def monitor(self, key: str, value: Any) -> None:
        field_name = {"tensorboard": "tensorboard", "csv_monitor": "csv_log", "wandb": "wandb"}[key]
        if not isinstance(value, dict):
            self.drop(key, "not an object")
            return
        known = self.dskeys.known_section_keys(key) or frozenset()
        for k, v in value.items():
            if k == "enabled":
                self.set_field(f"{key}.enabled", field_name, v)
            elif k in ("output_path", "job_name"):
                self.drop(f"{key}.{k}", "zerotui writes monitor output into the run folder")
            elif k in known:
                self.keep_value((key, k), v)
            else:
                self.unknown(f"{key}.{k}", known, ignored_silently=False)
