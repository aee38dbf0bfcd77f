"""What LLaMA-Factory's and axolotl's YAML importers share: a typed setter per Plan field, one warning per
key not carried over (saying what happens instead), paths resolved the way those tools resolve them (from
the current folder, then next to the YAML), precision, LoRA targets, the dataset file, the DeepSpeed file.

A subclass fills ``handlers`` (key -> method) and ``notes`` (key -> what zerotui does instead, for keys it
knows but does not carry over), and may set ``defaults`` (the tool's own value for a key the file leaves
out, where it differs from zerotui's).
"""
from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

from pydantic import TypeAdapter, ValidationError

from zerotui.core.errors import ConfigImportError
from zerotui.core.plan.schema import TINY_MODEL, Plan

#: The data files zerotui reads (core/data/files.py SUFFIXES; this layer names the file, never reads it).
DATA_SUFFIXES = (".json", ".jsonl", ".csv", ".parquet", ".txt")
#: What 'all linear layers' means for a Llama-family model, when the model's own layers cannot be read here.
LLAMA_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
#: HF / PEFT scheduler names -> the Plan's schedules (warm-up is separate in both).
SCHEDULES = {"cosine": "cosine", "linear": "linear", "constant": "constant", "constant_with_warmup": "constant",
             "cosine_with_min_lr": "cosine"}


def _adapter(name: str) -> TypeAdapter:
    info = Plan.model_fields[name]
    return TypeAdapter(Annotated[info.annotation, info])


class PeerMapper(ABC):
    tool = "peer"
    handlers: dict[str, Callable[[str, Any], None]]
    notes: dict[str, str] = {}

    def __init__(self, data: dict[str, Any], path: Path) -> None:
        self.data, self.path = data, path
        self.fields: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.dropped: list[str] = []
        self.ds_config: Optional[Any] = None   # the DeepSpeed file's path (or an inline dict) the YAML names
        self.ds_key = "deepspeed"
        self.handlers = {}
        self.register()

    @abstractmethod
    def register(self) -> None:
        """Fill ``self.handlers`` (each format's key table)."""

    # -- bookkeeping ------------------------------------------------------------------------------
    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def not_carried(self, key: str, instead: str, value: Any = None) -> None:
        """The one warning for a key that does not carry over."""
        shown = f"{key}={value!r}" if value is not None else key
        self.warn(f"{shown}: not carried over; {instead}")
        self.dropped.append(f"{key}: {instead.split(';')[0]}")

    def set(self, key: str, name: str, value: Any) -> bool:
        """Plan field ``name`` from ``key``; a value the Plan refuses is a warning naming what is kept."""
        try:
            self.fields[name] = _adapter(name).validate_python(value)
            return True
        except ValidationError as err:
            msg = err.errors()[0].get("msg", "invalid").replace("Input should be", "must be")
            self.not_carried(key, f"zerotui's {name} {msg}, so the plan keeps {name}={getattr(Plan(), name)!r}", value)
            return False

    def flag(self, value: Any) -> Optional[bool]:
        """YAML booleans, and the words HfArgumentParser also accepts."""
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
            return value.strip().lower() in ("true", "yes", "1")
        return None

    def number(self, value: Any) -> Any:
        """PyYAML reads ``1e-4`` (no dot) as a string; the tools' parsers turn it into a number."""
        if isinstance(value, str):
            try:
                return float(value) if any(c in value for c in ".eE") else int(value)
            except ValueError:
                return value
        return value

    # -- the walk ---------------------------------------------------------------------------------
    def run(self) -> None:
        for key, value in self.data.items():
            key = str(key)
            if value is None or value == "":
                continue  # an empty key (axolotl's examples list many) sets nothing in the tool either
            if key in self.handlers:
                self.handlers[key](key, value)
            elif key in self.notes:
                self.not_carried(key, self.notes[key], value)
            else:
                close = difflib.get_close_matches(key, [*self.handlers, *self.notes], n=1, cutoff=0.8)
                self.not_carried(key, f"not a {self.tool} setting zerotui knows, so it has no effect here"
                                 + (f" (did you mean '{close[0]}'?)" if close else ""), value)
        self.finish()

    def finish(self) -> None:
        """Settings that depend on several keys; subclasses extend it."""

    def refuse(self, message: str, hint: str) -> None:
        raise ConfigImportError(f"{self.path}: {message}", hint)

    # -- shared handlers --------------------------------------------------------------------------
    def field(self, name: str, convert: Callable[[Any], Any] = lambda v: v) -> Callable[[str, Any], None]:
        return lambda key, value: self.set(key, name, convert(value))

    def resolve(self, text: str, *folders: Path) -> Optional[Path]:
        """A relative path as the tool sees it (its working folder), then next to the YAML."""
        p = Path(str(text)).expanduser()
        if p.is_absolute():
            return p if p.exists() else None
        for base in (Path.cwd(), *folders, self.path.resolve().parent):
            if (base / p).exists():
                return (base / p).resolve()
        return None

    def deepspeed(self, key: str, value: Any) -> None:
        self.ds_key = key
        if isinstance(value, dict):
            self.ds_config = value
            return
        found = self.resolve(str(value))
        if found is None or not found.is_file():
            self.not_carried(key, f"the file is not here (looked from {Path.cwd()} and next to {self.path.name}), "
                             f"so its ZeRO settings are missing: the plan keeps stage {Plan().stage}, no offload; "
                             "give --stage and --offload-optimizer/--offload-params", value)
            return
        self.ds_config = found

    def precision(self, bf16: Any, fp16: Any, keys: tuple[str, str]) -> None:
        bf = bf16 == "auto" or self.flag(bf16) is True
        fp = self.flag(fp16) is True
        if bf16 == "auto":
            self.warn(f"{keys[0]}=auto: the plan uses bf16 (what {self.tool} picks on a GPU that has it); on an "
                      "older GPU choose --precision fp16")
        if bf and fp:
            self.warn(f"{keys[0]} and {keys[1]} are both on; the plan uses bf16")
        self.fields["precision"] = "bf16" if bf else "fp16" if fp else "fp32"
        if not (bf or fp):
            self.warn(f"neither {keys[0]} nor {keys[1]} is on, so {self.tool} trains in fp32 and so does the plan "
                      "(slow, the most memory); choose --precision bf16 or fp16")

    def schedule(self, key: str, value: Any) -> None:
        name = str(value).lower()
        if name in SCHEDULES:
            self.fields["lr_schedule"] = SCHEDULES[name]
        else:
            self.not_carried(key, f"zerotui schedules cosine, linear or constant after warm-up; the plan keeps "
                             f"{Plan().lr_schedule}", value)

    def warmup_ratio(self, key: str, value: Any) -> None:
        ratio, steps = self.number(value), self.fields.get("max_steps")
        if not isinstance(ratio, (int, float)) or not 0 <= ratio < 1:
            self.not_carried(key, "it must be a fraction between 0 and 1; the plan has no warm-up", value)
        elif "warmup_steps" in self.fields and self.fields["warmup_steps"] > 0:
            self.not_carried(key, "warmup_steps is given too and wins (as in the HF Trainer)", value)
        elif steps:
            self.fields["warmup_steps"] = int(-(-ratio * steps // 1))
        elif ratio > 0:
            self.not_carried(key, "zerotui counts warm-up in optimizer steps and the run's length is not known "
                             "before the data is read; the plan has no warm-up: give --warmup-steps "
                             f"(about {ratio:g} of the run's steps)", value)

    def max_steps(self, key: str, value: Any) -> None:
        value = self.number(value)
        if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
            return  # -1, the HF Trainer's "train by epochs"
        self.set(key, "max_steps", value)

    def targets(self, key: str, names: Any, all_linear: bool = False) -> None:
        """LoRA target modules; 'all' (every linear layer but the head) becomes the model's own names,
        since the trainer takes module names."""
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            self.not_carried(key, f"it must be a list of module names; the plan keeps {Plan().lora_targets}", names)
            return
        listed = [n for n in names if n not in ("all", "all-linear")]
        if all_linear or len(listed) < len(names):
            listed = sorted(set(listed) | set(self.linear_layers(key)))
        if listed:
            self.set(key, "lora_targets", listed)

    def linear_layers(self, key: str) -> list[str]:
        model = str(self.fields.get("model", TINY_MODEL))
        try:
            if model == TINY_MODEL or Path(model).is_dir() or model in _known_models():
                from zerotui.core.model.spec import spec_for_plan

                spec = spec_for_plan(Plan(model=model, trust_remote_code=bool(self.fields.get("trust_remote_code"))))
                return sorted({n for n, *_ in spec.linear_modules if n != "lm_head"})
        except Exception:  # noqa: BLE001 - an unreadable model is reported by estimate/train; here fall back
            pass
        self.warn(f"{key}: 'all linear layers' of {model} cannot be listed without its config here; the plan "
                  f"names the Llama-family ones ({','.join(LLAMA_LINEAR)}): check them with --lora-targets")
        return list(LLAMA_LINEAR)

    def data_file(self, key: str, text: Any, *folders: Path) -> Optional[str]:
        """A local data file as an absolute path, or a hub id as ``hub:ID``; None (warned) otherwise."""
        found = self.resolve(str(text), *folders)
        if found is not None and found.is_file() and found.suffix.lower() in DATA_SUFFIXES:
            return str(found)
        if found is not None:
            self.not_carried(key, f"zerotui reads one {'/'.join(DATA_SUFFIXES)} file; the plan keeps data: "
                             "sample — give --data FILE", text)
            return None
        if str(text).count("/") == 1 and not str(text).startswith((".", "/", "~")):
            return f"hub:{text}"
        self.not_carried(key, "no such file here (looked from the current folder and next to the YAML); the plan "
                         "keeps data: sample — give --data FILE.jsonl", text)
        return None


def _known_models() -> list[str]:
    from zerotui.core.model.spec import known_models

    return known_models()
