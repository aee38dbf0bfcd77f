"""Which training config a file is: a DeepSpeed ds_config (JSON), a LLaMA-Factory or an axolotl training
YAML; anything else is refused with what was seen (``/etc/passwd`` is a YAML string, an arbitrary YAML a
mapping with none of these formats' keys), so a wrong file never turns into a plan of defaults.

The file is read the way ``deepspeed/read.py`` reads a ds_config: through ``core/safe_read.py`` (a regular
file of bounded size, YAML of bounded depth and aliases); a JSON file goes on to ``read_ds_config`` for its
own, line-numbered errors.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml

from zerotui.core.errors import ConfigImportError
from zerotui.core.safe_read import PLAN_BYTES, ValueProblem, as_error, describe, load_yaml
from zerotui.core.safe_read import read_text as bounded_text

DS_CONFIG, LLAMA_FACTORY, AXOLOTL = "ds_config", "LLaMA-Factory", "axolotl"
HINT = ("give a DeepSpeed ds_config.json, a LLaMA-Factory training YAML (model_name_or_path: ...) or an "
        "axolotl YAML (base_model: ...)")

#: Keys only (or mostly) these tools write; the model key is required, the others break a tie.
MARKERS = {
    LLAMA_FACTORY: ("model_name_or_path", {"finetuning_type", "cutoff_len", "template", "lora_rank", "lora_target",
                                           "quantization_bit", "dataset_dir", "do_train", "stage", "dataset",
                                           "per_device_train_batch_size", "num_train_epochs", "output_dir"}),
    AXOLOTL: ("base_model", {"adapter", "sequence_len", "micro_batch_size", "num_epochs", "datasets",
                             "lora_target_modules", "lora_target_linear", "load_in_4bit", "load_in_8bit",
                             "sample_packing", "val_set_size", "lr_scheduler", "output_dir"}),
}


def read_text(path: Path) -> str:
    try:  # a training YAML is plan-sized; a FIFO, a device or 2 GB is refused here
        return bounded_text(path, PLAN_BYTES)
    except (OSError, UnicodeDecodeError) as err:
        hint = "save the file as UTF-8" if isinstance(err, UnicodeDecodeError) else HINT
        raise ConfigImportError(f"{path}: {describe(err)}", hint) from None


def parse_yaml(text: str, path: Path) -> Any:
    """Bounded ``safe_load`` (depth, aliases, numbers); yaml.YAMLError for bad syntax."""
    try:
        return load_yaml(text)
    except ValueProblem as err:
        raise as_error(err, str(path), ConfigImportError) from None


def kind_of_mapping(data: dict[str, Any]) -> Optional[str]:
    """LLaMA-Factory or axolotl for a parsed YAML mapping that names its model their way, else None."""
    scores = {tool: len(others & set(data)) for tool, (model_key, others) in MARKERS.items() if model_key in data}
    if not scores:
        return None
    return max(scores, key=lambda tool: scores[tool])


def _excerpt(text: str, limit: int = 60) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return repr(first[:limit] + ("..." if len(first) > limit else ""))


def _keys_seen(data: dict) -> str:
    keys = [str(k) for k in data]
    return ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")


def sniff(path: Path) -> tuple[str, Optional[dict[str, Any]]]:
    """``(kind, mapping)``: ``(DS_CONFIG, None)`` for a JSON file (read it with ``read_ds_config``), or a
    peer tool's name and its parsed YAML. Raises ConfigImportError naming what it saw otherwise."""
    if path.suffix.lower() == ".json":
        return DS_CONFIG, None  # read_ds_config reads it, with its own line-numbered errors
    text = read_text(path)
    if not text.strip():
        raise ConfigImportError(f"{path}: the file is empty", HINT)
    if text.lstrip().startswith(("{", "[")):
        return DS_CONFIG, None
    try:
        data = parse_yaml(text, path)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        if path.suffix.lower() in (".yaml", ".yml"):
            raise ConfigImportError(f"{path}: not valid YAML{where}: {getattr(err, 'problem', None) or err}",
                                    "fix the YAML syntax (indentation, ':' after each key)") from None
        raise ConfigImportError(f"{path}: neither JSON nor YAML (saw {_excerpt(text)}{where})", HINT) from None
    if not isinstance(data, dict):
        what = "text" if isinstance(data, str) else f"a YAML {type(data).__name__}"
        raise ConfigImportError(f"{path}: not a training config: saw {what}, starting {_excerpt(text)}, where a "
                                "mapping of settings was expected", HINT)
    kind = kind_of_mapping(data)
    if kind is not None:
        return kind, data
    from zerotui.core.plan.schema import field_names

    if "model" in data and set(map(str, data)) <= set(field_names()):
        raise ConfigImportError(f"{path} is already a zerotui plan (model: {data.get('model')!r})",
                                f"use it as it is: zerotui estimate --plan {path}, or zerotui train {path}")
    raise ConfigImportError(f"{path}: not a training config zerotui knows: saw a mapping of {_keys_seen(data)}, but "
                            "no model_name_or_path (LLaMA-Factory) or base_model (axolotl) and no DeepSpeed JSON", HINT)
