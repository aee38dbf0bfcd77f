"""The Plan: one typed description of a fine-tuning run.

Everything else reads it: the estimator, the recommender, the DeepSpeed config writer, the launcher, the
worker and the wizard. Field names are the CLI option names in kebab-case (``micro_batch`` is
``--micro-batch``), and each field's description is its help text, in the CLI and in the wizard.

Only what the user chooses lives here. What follows from it (the global batch, the world size) is
derived by methods, never stored, so it can never disagree with the rest.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from zerotui.core.errors import PlanError
from zerotui.core.plan.data_source import DataSpec, parse_data
from zerotui.core.plan.describe import describe_validation_error, yaml_error
from zerotui.core.plan.overrides_shape import check_overrides
from zerotui.core.plan.value_rules import bounded_int, no_yes_no_for_a_number
from zerotui.core.safe_read import (PLAN_BYTES, ValueProblem, as_error, check_value, describe, load_yaml,
                                    read_text)
from zerotui.core.sizes import parse_size

Method = Literal["full", "lora", "qlora"]
QuantType = Literal["nf4", "fp4"]
Precision = Literal["bf16", "fp16", "fp32"]
OffloadTarget = Literal["none", "cpu", "nvme"]
DataFormat = Literal["auto", "text", "alpaca", "chat", "prompt_response"]
Attention = Literal["sdpa", "eager", "flash"]
Kernels = Literal["auto", "liger", "none"]
Schedule = Literal["cosine", "linear", "constant"]

#: The model name that selects the built-in tiny Llama-family model (no download needed).
TINY_MODEL = "tiny"
#: The data name that selects the sample dataset shipped with zerotui.
SAMPLE_DATA = "sample"
#: Values a plan file may hold (about 90 fields, plus ds_overrides): an alias bomb stops here.
PLAN_VALUES = 10_000


class Plan(BaseModel):
    """A complete, validated description of one fine-tuning run."""

    # allow_inf_nan=False: NaN compares false with every bound (a NaN lr was "must be less than 1") and
    # inf would be exported as the non-JSON `Infinity`.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, protected_namespaces=(),
                              populate_by_name=True, allow_inf_nan=False)

    # -- identity ---------------------------------------------------------------------------------
    name: str = Field("run", min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                      description="Short name for the run or preset (letters, digits, . _ -).")
    description: str = Field("", description="One line saying what this plan is for.")

    # -- model ------------------------------------------------------------------------------------
    model: str = Field(TINY_MODEL, min_length=1, description=(
        "Model to fine-tune: 'tiny' (built-in, no download), a known architecture such as "
        "'llama-2-7b' (planning only), a local Hugging Face folder, or a hub id."))
    model_config_path: Optional[Path] = Field(None, alias="model_config", description=(
        "A config.json to plan with when the weights are not here yet (estimate/fit only)."))
    trust_remote_code: bool = Field(False, description=(
        "Run the model repository's own Python code. Only for models you trust."))
    attention: Attention = Field("sdpa", description=(
        "Attention kernel: sdpa (PyTorch's fused kernel, default), flash (flash-attn 2), eager."))
    kernels: Kernels = Field("auto", description=(
        "Fused GPU kernels (Liger: RMSNorm, RoPE, SwiGLU, a loss that never holds the full logits): "
        "auto (on where a GPU and the architecture allow), liger (required), none."))

    # -- data -------------------------------------------------------------------------------------
    data: DataSpec = Field(SAMPLE_DATA, min_length=1, description=(
        # Kept to two lines at 80 columns: the wizard shows it above the data preview (docs/data.md: mixes).
        "Training data: 'sample', a .jsonl/.json/.csv/.parquet/.txt file, a save_to_disk folder or "
        "hub:<id>; plan files can mix several."))
    data_format: DataFormat = Field("auto", description=(
        "Row format: auto-detect, text, alpaca (instruction/input/output), chat (messages), "
        "prompt_response."))
    text_field: str = Field("text", description="Column holding the text (format 'text').")
    prompt_field: str = Field("prompt", description="Column holding the prompt (format 'prompt_response').")
    response_field: str = Field("response", description="Column holding the answer (format 'prompt_response').")
    messages_field: str = Field("messages", description="Column holding the conversation (format 'chat').")
    eval_fraction: float = Field(0.05, ge=0.0, lt=0.5, description=(
        "Fraction of rows held out for evaluation (0 disables evaluation)."))
    packing: bool = Field(False, description=(
        "Pack short samples together up to the sequence length; each keeps its own positions and never "
        "attends to the others."))
    max_samples: Optional[int] = Field(None, gt=0, description="Use at most this many rows (for quick tries).")

    # -- method -----------------------------------------------------------------------------------
    method: Method = Field("full", description=(
        "full: train every weight. lora: train small adapters on a frozen 16-bit base. qlora: the same "
        "adapters on a base stored in 4 (or 8) bits, about a quarter of LoRA's weight memory."))
    lora_r: int = Field(16, ge=1, le=4096, description="LoRA rank: adapter width; more is bigger and slower.")
    lora_alpha: int = Field(32, ge=1, description="LoRA scaling numerator (the update is scaled by alpha/r).")
    lora_dropout: float = Field(0.05, ge=0.0, lt=1.0, description="Dropout on the adapters' input.")
    lora_targets: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
                                    min_length=1, description=(
        "Module names that get adapters, e.g. q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj."))

    quant_bits: Literal[4, 8] = Field(4, description=(
        "QLoRA only: bits per frozen weight: 4 (NF4 or FP4, bitsandbytes) or 8 (LLM.int8)."))
    quant_type: QuantType = Field("nf4", description=(
        "QLoRA 4-bit only: nf4 (NormalFloat, made for normally distributed weights) or fp4."))
    double_quant: bool = Field(True, description=(
        "QLoRA 4-bit only: quantise the quantisation constants too (saves ~0.4 bits per weight)."))

    # -- precision --------------------------------------------------------------------------------
    precision: Precision = Field("bf16", description=(
        "Number format for weights and activations: bf16 (Ampere or newer), fp16 (with loss "
        "scaling, any GPU), fp32 (slow, most memory)."))
    fp16_initial_scale_power: int = Field(16, ge=0, le=32, description=(
        "fp16 only: the loss scale starts at 2**this."))
    fp16_loss_scale_window: int = Field(1000, ge=1, description=(
        "fp16 only: steps without overflow before the loss scale is raised."))
    fp16_hysteresis: int = Field(2, ge=1, description="fp16 only: overflows tolerated before lowering the scale.")
    fp16_min_loss_scale: float = Field(1.0, gt=0, description="fp16 only: the loss scale never goes below this.")

    # -- ZeRO and offload -------------------------------------------------------------------------
    stage: int = Field(2, ge=0, le=3, description=(
        "ZeRO stage: 0 plain data parallel, 1 shards optimizer states, 2 also gradients, "
        "3 also the weights (the only stage that can offload parameters)."))
    offload_optimizer: OffloadTarget = Field("none", description=(
        "Where the optimizer states live: none (on the GPU, or in the process's RAM without one), "
        "cpu (host RAM), nvme (disk, needs --nvme-path)."))
    offload_params: OffloadTarget = Field("none", description=(
        "Where the weights live between uses (stage 3 only): none (GPU), cpu, nvme."))
    nvme_path: Optional[Path] = Field(None, description="Folder on a fast local NVMe disk for NVMe offload.")
    pin_memory: bool = Field(True, description=(
        "Page-lock offloaded host buffers: faster transfers, but that RAM cannot be swapped."))
    overlap_comm: bool = Field(True, description="Overlap gradient reduction with the backward pass.")
    contiguous_gradients: bool = Field(True, description="Copy gradients into one buffer to avoid fragmentation.")
    reduce_bucket_size: Optional[int] = Field(None, gt=0, description=(
        "Elements per gradient-reduction bucket (default: sized from the model)."))
    allgather_bucket_size: Optional[int] = Field(None, gt=0, description=(
        "Elements per all-gather bucket, stages 1-2 (default: sized from the model)."))
    stage3_prefetch_bucket_size: Optional[int] = Field(None, gt=0, description=(
        "Stage 3: elements of weights fetched ahead of use (default: sized from the model)."))
    stage3_param_persistence_threshold: Optional[int] = Field(None, ge=0, description=(
        "Stage 3: parameters smaller than this stay gathered on every GPU (default: sized from the model)."))
    stage3_max_live_parameters: Optional[int] = Field(None, gt=0, description=(
        "Stage 3: most gathered parameter elements held at once (default 1e9)."))
    stage3_max_reuse_distance: Optional[int] = Field(None, ge=0, description=(
        "Stage 3: keep a gathered parameter if it is reused within this many elements (default 1e9)."))
    sub_group_size: Optional[int] = Field(None, gt=0, description=(
        "Stage 3: elements per optimizer sub-group; smaller lowers the fp32 gradient buffer (default 1e9)."))
    offload_buffer_count: Optional[int] = Field(None, gt=0, description=(
        "NVMe offload: number of swap buffers (DeepSpeed default: 4 for the optimizer, at least 4; 5 for weights)."))
    offload_buffer_size: Optional[int] = Field(None, gt=0, description=(
        "NVMe parameter offload: elements per swap buffer; must hold the largest single weight."))
    zero_init: bool = Field(True, description=(
        "Stage 3: build the model already partitioned (zero.Init), so no rank holds it whole in RAM."))
    ds_overrides: dict[str, Any] = Field(default_factory=dict, description=(
        "Expert escape hatch: keys merged last into the generated ds_config.json (nested dicts merge)."))

    # -- hardware ---------------------------------------------------------------------------------
    gpus: Optional[int] = Field(None, ge=1, description="GPUs per node to use (default: all detected).")
    gpu_mem_cap: Optional[int] = Field(None, gt=0, description=(
        "Use at most this much memory of each GPU (e.g. 24GiB): for a shared card, or to try on a big "
        "card what a small one can do. The budget and Fit plan against it."))
    gpu_ids: Optional[list[int]] = Field(None, min_length=1, description=(
        "Use exactly these GPU indices on each node (e.g. 0,1); implies --gpus."))
    nodes: int = Field(1, ge=1, description="Number of machines (more than 1 needs --hostfile).")
    hostfile: Optional[Path] = Field(None, description="DeepSpeed hostfile: one 'hostname slots=N' line a node.")
    master_port: Optional[int] = Field(None, ge=1024, le=65535, description=(
        "Port for the launcher's rendezvous (default: a free one)."))

    # -- batch and sequence -----------------------------------------------------------------------
    micro_batch: int = Field(1, ge=1, le=4096, description="Sequences per GPU per forward pass.")
    grad_accum: int = Field(1, ge=1, le=65536, description=(
        "Micro-batches accumulated before each optimizer step."))
    seq_len: int = Field(512, ge=8, le=1_048_576, description="Tokens per sequence (longer rows are cut).")
    grad_ckpt: bool = Field(False, description=(
        "Activation checkpointing: recompute activations in backward; much less memory, ~30% slower."))

    # -- optimizer and schedule -------------------------------------------------------------------
    lr: float = Field(2e-5, gt=0, lt=1, description="Peak learning rate.")
    lr_schedule: Schedule = Field("cosine", description="How the rate moves after warm-up.")
    warmup_steps: int = Field(0, ge=0, description="Optimizer steps of linear warm-up from 0 to lr.")
    min_lr_ratio: float = Field(0.0, ge=0, le=1, description="The schedule ends at lr × this.")
    weight_decay: float = Field(0.0, ge=0, lt=1, description="AdamW weight decay.")
    adam_beta1: float = Field(0.9, gt=0, lt=1, description="AdamW beta1.")
    adam_beta2: float = Field(0.999, gt=0, lt=1, description="AdamW beta2.")
    adam_eps: float = Field(1e-8, gt=0, lt=1, description="AdamW epsilon.")
    grad_clip: float = Field(1.0, ge=0, description="Clip the gradient norm to this (0 disables).")
    epochs: float = Field(1.0, gt=0, le=1000, description="Passes over the training data (ignored with --max-steps).")
    max_steps: Optional[int] = Field(None, gt=0, description="Stop after this many optimizer steps.")

    # -- logging, evaluation, checkpoints ---------------------------------------------------------
    log_interval: int = Field(10, ge=1, description="Optimizer steps between step events (and loss syncs).")
    eval_interval: int = Field(0, ge=0, description="Optimizer steps between evaluations (0: only at the end).")
    eval_batches: int = Field(20, ge=1, description="Micro-batches per evaluation.")
    save_interval: int = Field(500, ge=0, description="Optimizer steps between checkpoints (0: never by step).")
    save_minutes: float = Field(30.0, ge=0, description="Minutes between checkpoints (0: never by time).")
    keep_checkpoints: int = Field(2, ge=1, description="Complete checkpoints kept on disk (oldest removed).")
    save_background: bool = Field(True, description=(
        "Write interval checkpoints in the background: training waits only while the state is copied to "
        "host memory (a file is written at once when free RAM cannot hold its copy)."))
    save_final: bool = Field(True, description="Write final/ (HF model or adapter) when the run completes.")
    tensorboard: bool = Field(False, description="Also log to TensorBoard (run dir / tensorboard).")
    csv_log: bool = Field(False, description="Also log to CSV files (run dir / csv).")
    wandb: bool = Field(False, description="Also log to Weights & Biases (needs wandb installed and logged in).")
    notify_url: Optional[str] = Field(None, max_length=2048, description=(
        "POST each alert and the run's end here, also with nothing attached (e.g. https://ntfy.sh/TOPIC, "
        "or a webhook with --notify-format json); retried while the server is down."))
    notify_format: Literal["ntfy", "json"] = Field("ntfy", description=(
        "ntfy: the message as the body with Title/Tags/Priority headers; json: a JSON object."))
    max_nonfinite: int = Field(3, ge=1, description="Stop after this many non-finite losses in a row.")
    stall_minutes: float = Field(10.0, gt=0, description="Alert when no step completes for this long.")

    # -- output -----------------------------------------------------------------------------------
    runs_dir: Optional[Path] = Field(None, description="Where run folders go (default: the user data folder).")
    seed: int = Field(42, ge=0, description="Random seed for weights of new layers, data order and dropout.")

    # -- single-field rules -----------------------------------------------------------------------
    @field_validator("notify_url")
    @classmethod
    def _notify_url_shape(cls, value: Optional[str]) -> Optional[str]:
        from urllib.parse import urlsplit

        if value is None or value == "":
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in value):
            raise ValueError(f"notify_url must be an http:// or https:// URL (got {value[:80]!r}), "
                             "e.g. https://ntfy.sh/my-runs")
        return value

    @field_validator("data", mode="before")
    @classmethod
    def _data_entries(cls, value: Any) -> Any:
        return parse_data(value)

    @field_validator("ds_overrides")
    @classmethod
    def _overrides_shape(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_overrides(value, PLAN_VALUES)

    @field_validator("runs_dir", "nvme_path", "hostfile", "model_config_path", mode="before")
    @classmethod
    def _not_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str) and not value.strip():  # Path("") is ".", the folder zerotui started in
            raise ValueError(f"{info.field_name} is empty; give a path, or leave it out for the default")
        return value

    @field_validator("*", mode="before")
    @classmethod
    def _no_yes_no_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        return no_yes_no_for_a_number(cls.model_fields[info.field_name].annotation, value, info.field_name)

    @field_validator("*")
    @classmethod
    def _bounded_ints(cls, value: Any, info: ValidationInfo) -> Any:
        return bounded_int(value, info.field_name)

    @field_validator("gpu_mem_cap", mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        if value is None or isinstance(value, bool):
            return value
        try:
            return parse_size(value, "gpu_mem_cap")
        except PlanError as err:
            raise ValueError(f"gpu_mem_cap {value!r} is not a size: {err.hint}") from None

    # -- cross-field rules ------------------------------------------------------------------------
    @model_validator(mode="after")
    def _check_combinations(self) -> "Plan":
        if self.offload_params != "none" and self.stage != 3:
            raise ValueError(
                f"offload_params={self.offload_params} needs stage 3 (got stage {self.stage}); "
                "use --stage 3 or --offload-params none")
        if self.offload_optimizer != "none" and self.stage == 0:
            raise ValueError(
                "offload_optimizer needs ZeRO stage 1, 2 or 3 (got stage 0); use --stage 2 or "
                "--offload-optimizer none")
        if self.offload_optimizer == "nvme" and self.stage != 3:  # stage_1_and_2.py: cpu_offload for either
            raise ValueError(f"offload_optimizer=nvme needs stage 3 (got stage {self.stage}): DeepSpeed's stages "
                             "1-2 keep it in host RAM instead; use --stage 3, or --offload-optimizer cpu")
        if "nvme" in (self.offload_optimizer, self.offload_params) and self.nvme_path is None:
            raise ValueError("nvme_path is required for NVMe offload; give --nvme-path DIR on a fast local disk")
        if self.offload_optimizer == "nvme" and self.offload_buffer_count is not None and self.offload_buffer_count < 4:
            # partitioned_optimizer_swapper.py swaps a sub-group in with a buffer for each of its tensors
            # and its gradient; with 2 or 3 the 0.13B CPU run failed at its first step ("range() arg 3 must
            # not be zero", an AssertionError), after the minutes a large model takes to load
            raise ValueError(f"offload_buffer_count={self.offload_buffer_count} is too few for the optimizer on "
                             "NVMe: DeepSpeed swaps the fp32 weights, Adam's two moments and the gradient in "
                             "together, a buffer each; use --offload-buffer-count 4 or more, or leave it unset")
        if self.nodes > 1 and self.hostfile is None:
            raise ValueError(f"nodes={self.nodes} needs a hostfile listing the machines; give --hostfile FILE")
        if self.gpu_ids is not None:
            if len(set(self.gpu_ids)) != len(self.gpu_ids) or min(self.gpu_ids) < 0:
                raise ValueError(f"gpu_ids must be distinct indices >= 0 (got {self.gpu_ids})")
            if self.gpus is not None and self.gpus != len(self.gpu_ids):
                raise ValueError(f"gpus={self.gpus} disagrees with gpu_ids={self.gpu_ids}; give one of them")
        if self.uses_adapters() and any(not t.strip() for t in self.lora_targets):
            raise ValueError("lora_targets has an empty module name")
        if self.method == "qlora" and self.offload_params != "none":
            raise ValueError("QLoRA keeps its quantised base on the GPU: offload_params must be none "
                             "(use --offload-params none, or --method lora to offload a 16-bit base)")
        if self.method == "qlora" and self.quant_bits == 8 and self.stage == 3:
            raise ValueError("8-bit QLoRA weights cannot be sharded by ZeRO-3; use --quant-bits 4 or --stage 2")
        return self

    # -- derived values ---------------------------------------------------------------------------
    def gpus_per_node(self, detected_gpus: int) -> int:
        """GPUs (processes) per node: the chosen count, else every detected GPU, else 1 CPU process."""
        if self.gpu_ids is not None:
            return len(self.gpu_ids)
        if self.gpus is not None:
            return self.gpus
        return max(detected_gpus, 1)

    def world_size(self, detected_gpus: int) -> int:
        """Data-parallel processes in total."""
        return self.gpus_per_node(detected_gpus) * self.nodes

    def sequences_per_step(self, world: int) -> int:
        """Sequences per optimizer step for ``world`` processes: micro-batch × accumulation × world
        (DeepSpeed's ``train_batch_size``, which it asserts and zerotui never asks for)."""
        return self.micro_batch * self.grad_accum * world

    def train_batch(self, detected_gpus: int) -> int:
        """Sequences per optimizer step on a machine with ``detected_gpus``."""
        return self.sequences_per_step(self.world_size(detected_gpus))

    def uses_adapters(self) -> bool:
        """LoRA or QLoRA: only the adapters train; the base is frozen."""
        return self.method in ("lora", "qlora")

    def uses_nvme(self) -> bool:
        return "nvme" in (self.offload_optimizer, self.offload_params)

    def with_changes(self, **changes: Any) -> "Plan":
        """A new validated Plan with some fields changed (the original is left as it is)."""
        data = self.to_dict()
        data.update(changes)
        return plan_from_dict(data)

    # -- (de)serialisation ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data with the field names a YAML file uses (``model_config`` for the config path)."""
        return self.model_dump(mode="json", by_alias=True)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)


def field_names() -> list[str]:
    """The names a plan file may use (aliases where a field has one)."""
    return [f.alias or name for name, f in Plan.model_fields.items()]


def field_help(name: str) -> str:
    """The one-line help of a plan field (by its file name or attribute name)."""
    for attr, f in Plan.model_fields.items():
        if name in (attr, f.alias):
            return f.description or ""
    raise KeyError(name)


def plan_from_dict(data: Any, source: str = "") -> Plan:
    """Validate plain data into a Plan; any problem becomes one PlanError line naming the field."""
    if not isinstance(data, dict):
        raise PlanError(f"{source or 'plan'}: expected a mapping of plan fields, got {type(data).__name__}",
                        "a plan file is YAML like 'model: tiny' one field per line")
    try:
        return Plan.model_validate(data)
    except ValidationError as err:
        # Cross-field messages carry their own fix; type/range errors get a pointer to the field list.
        own_fix = err.errors()[0].get("type") in ("value_error", "extra_forbidden")
        hint = "" if own_fix else "`zerotui estimate --help` lists every field and its accepted values"
        raise PlanError(describe_validation_error(err, source, field_names()), hint) from None


def plan_from_yaml(text: str, source: str = "plan") -> Plan:
    """A Plan from YAML text, loaded safely and bounded (core/safe_read.py); errors name ``source``."""
    try:
        data = load_yaml(text, max_values=PLAN_VALUES)
    except ValueProblem as err:
        raise as_error(err, source, PlanError) from None
    except yaml.YAMLError as err:
        raise yaml_error(err, source) from None
    if data is None:
        raise PlanError(f"{source}: the file is empty", "a plan needs at least 'model:' and 'data:'")
    return plan_from_dict(data, source)


def load_plan(path: Path | str, follow: bool = True, label: str = "") -> Plan:
    """The plan file at ``path``: a regular file of at most PLAN_BYTES (never a FIFO that would block);
    ``follow=False`` for a run folder's own plan.yaml."""
    p = Path(path)
    try:
        text = read_text(p, PLAN_BYTES, follow=follow)
    except (OSError, UnicodeDecodeError) as err:
        hint = ("save the plan as UTF-8 YAML" if isinstance(err, UnicodeDecodeError) else
                "give the path of a plan .yaml or a preset name (`zerotui presets` lists them)")
        raise PlanError(f"{p}: {describe(err)}", hint) from None
    return plan_from_yaml(text, label or str(p))
