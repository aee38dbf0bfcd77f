"""ModelSpec: the shape of a model, as the estimator and the DeepSpeed config need it.

A spec comes from (first match wins):
- ``--model-config config.json`` (plan without weights);
- ``tiny``: the built-in model (core/model/tiny.py);
- a well-known architecture by name (``llama-2-7b``, ``qwen2.5-7b``, ...: the table below, so people
  can plan before downloading);
- a local Hugging Face folder (its config.json);
- a hub id: its config from the Hugging Face cache, or from the hub when online.

Parameter counts are exact. Configs read from files or the hub are built on the meta device (no
memory, no weights) and counted, which works for any architecture transformers knows; the built-in
table uses the Llama-family formula, and tests/unit/test_models.py checks it against a meta build of each
entry. Results are cached: the wizard asks on every keystroke.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from zerotui.core.errors import ModelError
from zerotui.core.plan.schema import TINY_MODEL

#: Architectures whose activation memory benchmarks/estimator measured (RMSNorm, rotary, SwiGLU).
LLAMA_FAMILY = frozenset({"llama", "mistral", "qwen2", "qwen3"})


@dataclass(frozen=True)
class ModelSpec:
    """What the planner needs to know about a model; every count is exact."""

    name: str
    arch: str                          # config.model_type, e.g. "llama"
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    params_total: int                  # unique parameters (a tied head counted once)
    largest_param_numel: int           # the biggest single weight (the embedding for LLMs)
    largest_layer_params: int          # most parameters held directly by one module (DeepSpeed's "layer")
    #: (module name, in_features, out_features, how many) for every nn.Linear: LoRA's possible targets
    linear_modules: tuple[tuple[str, int, int, int], ...] = ()
    #: (element count, how many) of every parameter tensor: pinned host buffers round each one up
    param_shapes: tuple[tuple[int, int], ...] = ()
    attention_bias: bool = False
    max_position_embeddings: int = 0
    source: str = ""

    @property
    def kv_size(self) -> int:
        """h_kv: width of the key (or value) projection."""
        return self.num_kv_heads * self.head_dim

    @property
    def calibrated(self) -> bool:
        """True for the Llama family, whose activation memory was measured on a GPU."""
        return self.arch in LLAMA_FAMILY

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("linear_modules", "param_shapes")}


# name -> (model_type, hidden, layers, heads, kv heads, MLP width, vocab, tied, qkv bias, max positions)
# Values from each model's config.json on the Hugging Face hub.
_TABLE: dict[str, tuple] = {
    "llama-2-7b": ("llama", 4096, 32, 32, 32, 11008, 32000, False, False, 4096),
    "llama-2-13b": ("llama", 5120, 40, 40, 40, 13824, 32000, False, False, 4096),
    "llama-2-70b": ("llama", 8192, 80, 64, 8, 28672, 32000, False, False, 4096),
    "llama-3-8b": ("llama", 4096, 32, 32, 8, 14336, 128256, False, False, 8192),
    "llama-3-70b": ("llama", 8192, 80, 64, 8, 28672, 128256, False, False, 8192),
    "llama-3.1-8b": ("llama", 4096, 32, 32, 8, 14336, 128256, False, False, 131072),
    "llama-3.1-70b": ("llama", 8192, 80, 64, 8, 28672, 128256, False, False, 131072),
    "llama-3.2-1b": ("llama", 2048, 16, 32, 8, 8192, 128256, True, False, 131072),
    "llama-3.2-3b": ("llama", 3072, 28, 24, 8, 8192, 128256, True, False, 131072),
    "mistral-7b": ("mistral", 4096, 32, 32, 8, 14336, 32000, False, False, 32768),
    "qwen2.5-0.5b": ("qwen2", 896, 24, 14, 2, 4864, 151936, True, True, 32768),
    "qwen2.5-1.5b": ("qwen2", 1536, 28, 12, 2, 8960, 151936, True, True, 32768),
    "qwen2.5-3b": ("qwen2", 2048, 36, 16, 2, 11008, 151936, True, True, 32768),
    "qwen2.5-7b": ("qwen2", 3584, 28, 28, 4, 18944, 152064, False, True, 32768),
    "qwen2.5-14b": ("qwen2", 5120, 48, 40, 8, 13824, 152064, False, True, 32768),
    "qwen2.5-32b": ("qwen2", 5120, 64, 40, 8, 27648, 152064, False, True, 32768),
    "qwen2.5-72b": ("qwen2", 8192, 80, 64, 8, 29568, 152064, False, True, 32768),
}
_ALIASES = {"llama-2-7b-hf": "llama-2-7b", "llama-3-8b-instruct": "llama-3-8b", "mistral-7b-v0.1": "mistral-7b"}


def known_models() -> list[str]:
    """Names accepted by ``--model`` without a download (planning only, except ``tiny``)."""
    return [TINY_MODEL, *_TABLE]


def table_config(name: str) -> dict[str, Any]:
    """The config.json body of a built-in architecture (what its Hugging Face folder holds)."""
    mt, h, layers, heads, kv, inter, vocab, tied, bias, maxpos = _TABLE[name]
    arch = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM"}[mt]
    d = {"architectures": [arch], "model_type": mt, "hidden_size": h, "num_hidden_layers": layers,
         "num_attention_heads": heads, "num_key_value_heads": kv, "intermediate_size": inter,
         "vocab_size": vocab, "tie_word_embeddings": tied, "max_position_embeddings": maxpos,
         "rms_norm_eps": 1e-5, "hidden_act": "silu"}
    if mt == "llama":
        d["attention_bias"] = bias
    return d


def _llama_family_spec(name: str, d: dict[str, Any], source: str) -> ModelSpec:
    """Exact counts for the Llama / Mistral / Qwen2 layout (checked against meta builds in the tests)."""
    h, layers = int(d["hidden_size"]), int(d["num_hidden_layers"])
    heads = int(d["num_attention_heads"])
    kv = int(d.get("num_key_value_heads") or heads)
    hd = int(d.get("head_dim") or h // heads)
    inter, vocab = int(d["intermediate_size"]), int(d["vocab_size"])
    tied = bool(d.get("tie_word_embeddings", False))
    mt = d.get("model_type", "llama")
    qkv_bias = bool(d.get("attention_bias", mt == "qwen2"))
    o_bias = bool(d.get("attention_bias", False)) and mt == "llama"
    linears = (("q_proj", h, heads * hd), ("k_proj", h, kv * hd), ("v_proj", h, kv * hd),
               ("o_proj", heads * hd, h), ("gate_proj", h, inter), ("up_proj", h, inter),
               ("down_proj", inter, h))
    per_layer_shapes = [i * o for _, i, o in linears] + [h, h]  # + two RMSNorm weights
    if qkv_bias:
        per_layer_shapes += [heads * hd, kv * hd, kv * hd]
    if o_bias:
        per_layer_shapes += [h]
    shapes: dict[int, int] = {}
    for n in per_layer_shapes:
        shapes[n] = shapes.get(n, 0) + layers
    shapes[vocab * h] = shapes.get(vocab * h, 0) + (1 if tied else 2)
    shapes[h] = shapes.get(h, 0) + 1  # final norm
    total = sum(n * c for n, c in shapes.items())
    lin = tuple((n, i, o, layers) for n, i, o in linears) + (("lm_head", h, vocab, 1),)
    return ModelSpec(
        name=name, arch=mt, hidden_size=h, num_layers=layers, num_heads=heads, num_kv_heads=kv, head_dim=hd,
        intermediate_size=inter, vocab_size=vocab, tied_embeddings=tied, params_total=total,
        largest_param_numel=max(vocab * h, *(i * o for _, i, o in linears)),
        largest_layer_params=max(vocab * h, *(i * o for _, i, o in linears)),
        linear_modules=lin, param_shapes=tuple(sorted(shapes.items())), attention_bias=qkv_bias,
        max_position_embeddings=int(d.get("max_position_embeddings") or 0), source=source)


def _meta_spec(name: str, d: dict[str, Any], source: str, trust_remote_code: bool,
               folder: str = "") -> ModelSpec:
    """Build the model on the meta device (no memory) and count what is really there."""
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as err:  # pragma: no cover - torch/transformers are dependencies
        raise ModelError(f"model {name}: cannot inspect it ({err})", "install zerotui's dependencies") from None
    body = {k: v for k, v in d.items() if k not in ("model_type", "transformers_version")}
    try:
        if trust_remote_code and folder and d.get("auto_map"):
            # The model ships its own classes (auto_map): only its folder can build them, and only with
            # the user's explicit consent (checked by the caller through trust_remote_code).
            config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
        else:
            config = AutoConfig.for_model(d.get("model_type", ""), **body)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, trust_remote_code=trust_remote_code)
    except Exception as err:  # noqa: BLE001 - any value a config holds can fail a constructor differently
        raise ModelError(f"model {name}: transformers cannot build a causal LM from {source} "
                         f"({_telling_line(err)[:200]})",
                         "zerotui plans decoder-only models; check model_type in config.json") from None
    seen: dict[int, int] = {}
    shapes: dict[int, int] = {}
    largest_layer = 0
    for mod in model.modules():
        own = [p.numel() for p in mod.parameters(recurse=False)]
        if own:
            largest_layer = max(largest_layer, sum(own))
    for p in model.parameters():
        if id(p) not in seen:
            seen[id(p)] = p.numel()
            shapes[p.numel()] = shapes.get(p.numel(), 0) + 1
    linears: dict[tuple[str, int, int], int] = {}
    qkv_bias = False
    for mod_name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            key = (mod_name.rsplit(".", 1)[-1], mod.in_features, mod.out_features)
            linears[key] = linears.get(key, 0) + 1
            qkv_bias = qkv_bias or (key[0] == "q_proj" and mod.bias is not None)
    cfg = model.config
    h = int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0) or 0)
    heads = int(getattr(cfg, "num_attention_heads", 0) or getattr(cfg, "n_head", 0) or 1)
    kv = int(getattr(cfg, "num_key_value_heads", 0) or heads)
    hd = int(getattr(cfg, "head_dim", 0) or (h // heads if heads else 0))
    inter = int(getattr(cfg, "intermediate_size", 0) or getattr(cfg, "n_inner", 0) or 4 * h)
    layers = int(getattr(cfg, "num_hidden_layers", 0) or getattr(cfg, "n_layer", 0) or 0)
    vocab = int(getattr(cfg, "vocab_size", 0) or 0)
    return ModelSpec(
        name=name, arch=str(getattr(cfg, "model_type", d.get("model_type", "?"))), hidden_size=h,
        num_layers=layers, num_heads=heads, num_kv_heads=kv, head_dim=hd, intermediate_size=inter,
        vocab_size=vocab, tied_embeddings=bool(getattr(cfg, "tie_word_embeddings", False)),
        params_total=sum(seen.values()), largest_param_numel=max(seen.values(), default=0),
        largest_layer_params=largest_layer,
        linear_modules=tuple((n, i, o, c) for (n, i, o), c in sorted(linears.items())),
        param_shapes=tuple(sorted(shapes.items())), attention_bias=qkv_bias,
        max_position_embeddings=int(getattr(cfg, "max_position_embeddings", 0) or 0), source=source)


def spec_from_config(d: dict[str, Any], name: str = "model", source: str = "config",
                     trust_remote_code: bool = False, folder: str = "") -> ModelSpec:
    """A spec from a config.json body (meta-device build: exact for any architecture)."""
    if not isinstance(d, dict) or "model_type" not in d:
        raise ModelError(f"model {name}: {source} has no model_type",
                         "give the config.json that comes with the model (it names model_type)")
    key = json.dumps(d, sort_keys=True, default=str)
    return _meta_spec_cached(name, key, source, trust_remote_code, folder)


@functools.lru_cache(maxsize=64)
def _meta_spec_cached(name: str, key: str, source: str, trust_remote_code: bool, folder: str) -> ModelSpec:
    from zerotui.core.model import spec_cache

    remote = trust_remote_code and bool(json.loads(key).get("auto_map"))
    if not remote:  # a folder's own code may change without its config.json changing: never cached
        stored = spec_cache.load(key, trust_remote_code)
        spec = spec_cache.as_spec(ModelSpec, stored["fields"], name, source) if stored else None
        if spec is not None:
            return spec
    spec = _meta_spec(name, json.loads(key), source, trust_remote_code, folder)
    if not remote:
        spec_cache.store(key, trust_remote_code, spec)
    return spec


def spec_is_cached(d: dict[str, Any], trust_remote_code: bool = False) -> bool:
    """Whether a spec of this config body was built before (so transformers knows its model_type)."""
    from zerotui.core.model import spec_cache

    return spec_cache.load(json.dumps(d, sort_keys=True, default=str), trust_remote_code) is not None


def _read_config(path: Path, name: str) -> dict[str, Any]:
    from zerotui.core.model.config_file import read_config_file

    return read_config_file(path)


def _hub_config(name: str, trust_remote_code: bool) -> Optional[dict[str, Any]]:
    """A hub id's config from the local cache, or from the hub when the network allows."""
    try:
        from transformers import AutoConfig
    except ImportError:  # pragma: no cover
        return None
    from zerotui.core.hardware.hub import hub_reachable

    # The cache first; the network only when the hub answers a quick connect (core/hardware/hub.py).
    attempts = [True, False] if hub_reachable() else [True]
    for local_only in attempts:
        try:
            cfg = AutoConfig.from_pretrained(name, local_files_only=local_only, trust_remote_code=trust_remote_code)
            return cfg.to_dict()
        except Exception:  # noqa: BLE001 - not cached / offline / no such repo: try the next source
            continue
    return None


def _resolve(model: str, config_path: Optional[str], trust_remote_code: bool) -> ModelSpec:
    if config_path:
        p = Path(config_path).expanduser()
        return spec_from_config(_read_config(p, model), model, f"config {p}", trust_remote_code)
    key = model.strip().lower()
    if key == TINY_MODEL:
        from zerotui.core.model.tiny import TINY_SHAPE

        d = {"model_type": "llama", **{k: v for k, v in TINY_SHAPE.items() if not k.endswith("token_id")}}
        return _llama_family_spec(TINY_MODEL, d, "built-in tiny model (core/model/tiny.py)")
    key = _ALIASES.get(key, key)
    if key in _TABLE:
        return _llama_family_spec(key, table_config(key), "built-in table (core/model/spec.py)")
    p = Path(model).expanduser()
    if p.is_dir():
        cfg = p / "config.json"
        if not cfg.exists() and not cfg.is_symlink():  # a FIFO or a folder there is refused by name
            raise ModelError(f"model folder {p} has no config.json",
                             "give a Hugging Face model folder (save_pretrained writes config.json)")
        return spec_from_config(_read_config(cfg, model), model, f"folder {p}", trust_remote_code, str(p))
    if p.suffix == ".json" and p.is_file():
        return spec_from_config(_read_config(p, model), model, f"config {p}", trust_remote_code)
    if "/" in model and not p.exists() and not model.startswith(("/", ".", "~")):
        d = _hub_config(model, trust_remote_code)
        if d is not None:
            from zerotui.core.model.config_file import check_heads

            check_heads(d, f"model config of hub {model}")  # files are checked as they are read
            return spec_from_config(d, model, f"hub {model}", trust_remote_code)
        raise ModelError(f"model {model}: not in the Hugging Face cache and the hub could not be reached",
                         "download it first, or plan with --model-config config.json or a known name "
                         f"({', '.join(known_models()[:6])}, ...)")
    raise ModelError(f"model {model}: not a known architecture, a folder with config.json, or a hub id",
                     f"known names: {', '.join(known_models())}")


@functools.lru_cache(maxsize=128)
def _resolve_cached(model: str, config_path: Optional[str], mtime: float, trust_remote_code: bool) -> ModelSpec:
    return _resolve(model, config_path, trust_remote_code)


def spec_for_plan(plan) -> ModelSpec:
    """The ModelSpec of ``plan.model`` (or its ``--model-config``); raises ModelError. Cached."""
    config_path = str(plan.model_config_path) if plan.model_config_path else None
    watched = Path(config_path) if config_path else Path(plan.model).expanduser() / "config.json"
    try:
        mtime = watched.stat().st_mtime
    except OSError:
        mtime = 0.0
    return _resolve_cached(plan.model, config_path, mtime, bool(plan.trust_remote_code))


def lora_targets_found(spec: ModelSpec, targets) -> dict[str, list[tuple[int, int, int]]]:
    """target name -> [(in, out, count)] of the Linear modules it adapts ('all-linear': all but lm_head)."""
    names = list(targets)
    if any(t == "all-linear" for t in names):
        names = sorted({n for n, *_ in spec.linear_modules if n != "lm_head"})
    found: dict[str, list[tuple[int, int, int]]] = {}
    for t in names:
        hits = [(i, o, c) for n, i, o, c in spec.linear_modules if n == t]
        if not hits:
            linear = sorted({n for n, *_ in spec.linear_modules})
            raise ModelError(f"lora_targets {t} is not a linear module of {spec.name}",
                             f"its linear layers are: {', '.join(linear)}", field="lora_targets")
        found[t] = hits
    return found


def lora_trainable_params(spec: ModelSpec, plan) -> int:
    """Parameters LoRA trains: r·(in + out) for every adapted Linear (PEFT's lora_A and lora_B, no bias)."""
    found = lora_targets_found(spec, plan.lora_targets)
    return sum(plan.lora_r * (i + o) * c for hits in found.values() for i, o, c in hits)


def trainable_params(spec: ModelSpec, plan) -> int:
    return lora_trainable_params(spec, plan) if plan.uses_adapters() else spec.params_total


def _telling_line(err: BaseException) -> str:
    """The line of a constructor's error that says what is wrong: transformers' config validation puts a
    heading first ("Class validation error for validator 'validate_architecture':") and the reason ("The
    hidden size (128) is not a multiple of the number of attention heads (3).") on the next line."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    telling = [ln for ln in lines if not ln.endswith(":")]
    return (telling or lines or [type(err).__name__])[0]
