"""Loading the model and tokenizer a plan names, ready for ``deepspeed.initialize``.

- ``tiny``: the built-in Llama-family model (``core/model/tiny.py``), no download.
- a local folder written by ``save_pretrained``, a model in the Hugging Face cache, or a hub id.

Stage 3 builds the model already partitioned (``zero.Init``, through transformers' own DeepSpeed
integration), so a model larger than one rank's RAM can still be built. LoRA and QLoRA go through PEFT;
QLoRA's base is loaded in 4 or 8 bits by bitsandbytes (``quantise.py``).
Training-time settings that matter for speed are applied here: SDPA attention by default,
``use_cache=False`` (a plain loop measured ~10% faster without the KV cache on the H200), and activation
checkpointing with ``use_reentrant=False`` (the reentrant variant needs inputs that require grad and
breaks with frozen embeddings under LoRA).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.errors import ModelError
from zerotui.core.model import kernels
from zerotui.core.model.quantise import device_map, prepare_base, logical_numel, quantization_config
from zerotui.core.plan.schema import TINY_MODEL

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "model.safetensors.index.json", "*.pt")
ATTENTION = {"sdpa": "sdpa", "eager": "eager", "flash": "flash_attention_2"}


@dataclass
class LoadedModel:
    model: Any                      # nn.Module (a PeftModel for LoRA and QLoRA)
    tokenizer: Any
    config: Any                     # the base model's PretrainedConfig
    params_total: int
    params_trainable: int
    params_matmul: int              # weights used in matrix multiplies per token (FLOPs): no input embedding
    is_lora: bool                   # adapters only (LoRA or QLoRA): checkpoints and final/ hold them alone
    # transformers' DeepSpeed integration holds only a weak reference to this: while it is alive, HF
    # code (save_pretrained, resize, from_pretrained) knows stage 3 is on. Keep it as long as the model.
    keepalive: list[Any] = field(default_factory=list)
    kernel_choice: kernels.KernelChoice = kernels.KernelChoice(False, False, "not chosen")

    @property
    def num_layers(self) -> int:
        return int(getattr(self.config, "num_hidden_layers", 0) or 0)

    @property
    def hidden_size(self) -> int:
        return int(getattr(self.config, "hidden_size", 0) or 0)


def torch_dtype(precision: str):
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[precision]


def _local_folder(plan: Any) -> Optional[Path]:
    if plan.model == TINY_MODEL:
        from zerotui.core.model.tiny import materialise

        return materialise(plan.seed)
    p = Path(plan.model).expanduser()
    if p.exists() or plan.model.startswith((".", "/", "~")):
        return p
    return None


def check_local_folder(folder: Path) -> None:
    """ModelError for what a user most often gets wrong about a model folder."""
    if not folder.exists():
        raise ModelError(f"model folder {folder} does not exist",
                         "give a folder written by save_pretrained, a hub id such as Qwen/Qwen2.5-0.5B, or 'tiny'")
    if not folder.is_dir():
        raise ModelError(f"model {folder} is a file, not a folder",
                         "give the folder that holds config.json and the weights")
    if not (folder / "config.json").exists():
        hint = ("this is a LoRA adapter: give its base model and train a new adapter, or merge it first "
                "with `zerotui merge`") if (folder / "adapter_config.json").exists() else \
            "a Hugging Face model folder holds config.json next to the weights"
        raise ModelError(f"model folder {folder} has no config.json", hint)
    if not any(any(folder.glob(pat)) for pat in WEIGHT_PATTERNS):
        raise ModelError(f"model folder {folder} has config.json but no weights (*.safetensors or *.bin)",
                         "copy the weight files too; to plan without weights use `zerotui estimate --model-config`")


def _planning_only(name: str) -> bool:
    """Names such as 'llama-2-7b' that core/model/spec.py knows as shapes for planning, without weights."""
    from zerotui.core.model.spec import known_models

    return name in set(known_models())


def _cache_only_without_network(plan: Any) -> None:
    """A hub id on a machine that cannot reach the hub: the cache, at once (core/hardware/hub.py)."""
    if _local_folder(plan) is None and not _planning_only(plan.model):
        from zerotui.core.hardware.hub import go_offline

        go_offline()


def load_config(plan: Any) -> Any:
    """The model's config (no weights): what the ds_config's bucket sizes and FLOP counts need."""
    folder = _local_folder(plan)
    if folder is not None:
        check_local_folder(folder)
    elif _planning_only(plan.model):
        raise ModelError(f"'{plan.model}' is a built-in shape for planning and has no weights",
                         "give a local model folder or a hub id (e.g. meta-llama/Llama-2-7b-hf) to train")
    from transformers import AutoConfig

    _cache_only_without_network(plan)
    source = str(folder) if folder is not None else plan.model
    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=plan.trust_remote_code)
    except ValueError as err:  # unknown model_type, or remote code refused
        msg = str(err).splitlines()[0][:200]
        hint = ("it ships its own code: set trust_remote_code: true only if you trust that repository"
                if "trust_remote_code" in str(err) else
                "upgrade transformers, or check config.json's model_type")
        raise ModelError(f"model {source}: unknown architecture ({msg})", hint) from None
    except OSError as err:
        raise ModelError(f"model {source} was not found locally, in the Hugging Face cache or on the hub "
                         f"({str(err).splitlines()[0][:160]})",
                         "check the id or path; offline machines need the model downloaded first") from None
    from zerotui.core.model.config_file import check_heads

    # A hub id's config was never read by zerotui before (a folder's was, at launch): transformers builds
    # a model whose heads do not divide and fails only at its first forward, or computes narrower heads.
    check_heads(config.to_dict(), f"model config of {source}")
    return config


def load_tokenizer(plan: Any) -> Any:
    if plan.model == TINY_MODEL:
        from zerotui.core.model.tiny import tiny_tokenizer

        return tiny_tokenizer()
    from transformers import AutoTokenizer

    folder = _local_folder(plan)
    source = str(folder) if folder is not None else plan.model
    try:
        tok = AutoTokenizer.from_pretrained(source, trust_remote_code=plan.trust_remote_code)
    except (OSError, ValueError) as err:
        raise ModelError(f"model {source}: no usable tokenizer ({str(err).splitlines()[0][:160]})",
                         "the model folder needs tokenizer.json or the tokenizer files it was saved with") from None
    return tok


def load_model(plan: Any, ds_config: dict, tokenizer: Any, config: Any = None,
               note: Optional[Callable[[str], None]] = None) -> LoadedModel:
    """Build or load the model for ``plan`` in the precision DeepSpeed will train it in."""
    import torch

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-shard bars would fill worker.log; phases say what happens
    config = config if config is not None else load_config(plan)
    keepalive: list[Any] = []
    if plan.stage == 3 and plan.zero_init:
        # transformers wraps construction / from_pretrained in deepspeed.zero.Init (and re-initialises
        # or loads each weight gathered, one module at a time) while this object is alive.
        from transformers.integrations import HfDeepSpeedConfig

        keepalive.append(HfDeepSpeedConfig(ds_config))
    dtype = torch_dtype(plan.precision)
    attn = ATTENTION[plan.attention]
    # Before the weights load: an impossible ``kernels: liger`` should not cost a 7B load first.
    fused = kernels.require(plan, str(getattr(config, "model_type", "") or ""), torch.cuda.is_available())
    config.use_cache = False
    torch.manual_seed(plan.seed)  # new weights (LoRA adapters) depend only on the seed
    try:
        model = _from_pretrained(plan, config, dtype, attn, quantization_config(plan, dtype))
    except ImportError as err:  # flash-attn missing, most often
        raise ModelError(f"model {plan.model}: {str(err).splitlines()[0][:200]}",
                         "use --attention sdpa, or install the missing package") from None
    model.config.use_cache = False
    _check_vocab(model, tokenizer, plan)
    kernels.apply(model, fused)  # before PEFT wraps the modules and DeepSpeed hooks them
    if plan.method == "qlora":
        prepare_base(model)
    if plan.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    is_lora = plan.uses_adapters()
    if is_lora:
        model = _add_lora(model, plan, dtype)
    total, trainable, matmul = _count(model)
    if note:
        method = {"lora": " (LoRA)", "qlora": f" (QLoRA {plan.quant_bits}-bit)"}.get(plan.method, "")
        note(f"model {plan.model}: {total / 1e6:,.1f}M weights, {trainable / 1e6:,.3f}M trainable{method}, "
             f"{plan.precision}, attention {attn}; {fused.describe()}")
    return LoadedModel(model, tokenizer, config, total, trainable, matmul, is_lora, keepalive, fused)


def _from_pretrained(plan: Any, config: Any, dtype: Any, attn: str, quantization: Any = None) -> Any:
    """The weights, in ``dtype`` (QLoRA: quantised as ``quantization`` says); under stage 3
    (HfDeepSpeedConfig alive) partitioned while loading."""
    from transformers import AutoModelForCausalLM

    folder = _local_folder(plan)
    source = str(folder) if folder is not None else plan.model
    extra: dict[str, Any] = {}
    if quantization is not None:
        extra = {"quantization_config": quantization}
        placement = device_map(plan)
        if placement is not None:
            extra["device_map"] = placement
    try:
        return AutoModelForCausalLM.from_pretrained(
            source, config=config, dtype=dtype, attn_implementation=attn,
            trust_remote_code=plan.trust_remote_code, low_cpu_mem_usage=True, **extra)
    except ValueError as err:
        raise ModelError(f"model {source} is not a causal language model transformers can load "
                         f"({str(err).splitlines()[0][:160]})",
                         "zerotui fine-tunes decoder-only models (AutoModelForCausalLM)") from None
    except OSError as err:
        raise ModelError(f"model {source}: the weights could not be read ({str(err).splitlines()[0][:160]})",
                         "check the files are complete (a download may have been cut short)") from None
    except RuntimeError as err:
        # transformers prints a table of the mismatched weights to the log and raises this summary.
        if "mismatched_sizes" not in str(err) and "size mismatch" not in str(err):
            raise
        raise ModelError(f"model {source}: the weights' shapes do not match its config.json (see worker.log "
                         "for which weights)", "use the config.json that was saved with these weights") from None
    except Exception as err:  # noqa: BLE001 - safetensors' own error class has no public base to catch
        if type(err).__name__ != "SafetensorError":
            raise
        raise ModelError(f"model {source}: a weights file is damaged ({str(err).splitlines()[0][:160]})",
                         "copy or download the weight files again (one was cut short or overwritten)") from None


def _check_vocab(model: Any, tokenizer: Any, plan: Any) -> None:
    emb = model.get_input_embeddings()
    rows = int(getattr(emb, "num_embeddings", 0) or 0)
    if rows and len(tokenizer) > rows:
        raise ModelError(f"model {plan.model}: the tokenizer has {len(tokenizer)} tokens but the embedding "
                         f"only {rows} rows", "use the tokenizer saved with this model")


def _add_lora(model: Any, plan: Any, dtype: Any) -> Any:
    from peft import LoraConfig, get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [t for t in plan.lora_targets if t not in names]
    if missing:
        linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules()
                         if type(m).__name__ == "Linear" and "." in n})
        raise ModelError(f"lora_targets {', '.join(missing)} are not modules of {plan.model}",
                         f"its linear layers are: {', '.join(linear[:12])}")
    cfg = LoraConfig(r=plan.lora_r, lora_alpha=plan.lora_alpha, lora_dropout=plan.lora_dropout,
                     target_modules=list(plan.lora_targets), bias="none", task_type="CAUSAL_LM")
    # The adapters in the training dtype, not PEFT's fp32 default (``autocast_adapter_dtype``): DeepSpeed
    # keeps the fp32 master copy itself, and its ZeRO optimizers choose fp16 loss scaling from the dtype
    # of the first trainable weight (stage_1_and_2.py / stage3.py: CreateLossScaler(dtype=...)). fp32
    # adapters under ZeRO-3, which skips the engine's cast of a zero.Init model, meant a static scale of 1:
    # fp16 gradients that were never scaled.
    model = get_peft_model(model, cfg, autocast_adapter_dtype=False)
    for p in model.parameters():
        if p.requires_grad and p.dtype != dtype:
            p.data = p.data.to(dtype)
    if plan.grad_ckpt:
        # The frozen embedding's output needs grad for checkpointed layers to backpropagate into LoRA.
        model.enable_input_require_grads()
    return model


def _numel(p: Any) -> int:
    return logical_numel(p)


def _count(model: Any) -> tuple[int, int, int]:
    total = trainable = 0
    for p in model.parameters():
        n = _numel(p)
        total += n
        if p.requires_grad:
            trainable += n
    emb = model.get_input_embeddings()
    emb_n = sum(_numel(p) for p in emb.parameters()) if emb is not None else 0
    return total, trainable, total - emb_n
