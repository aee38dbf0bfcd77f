"""Reading a model's config.json: a regular file of bounded size, bounded JSON (core/safe_read.py), and
the shape fields a decoder needs are positive integers — ``hidden_size: 0`` or ``num_hidden_layers: -1``
is one line here, not a ZeroDivisionError from inside transformers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zerotui.core.errors import ModelError
from zerotui.core.safe_read import (MODEL_CONFIG_BYTES, ValueProblem, as_error, describe, load_json, quote,
                                    read_text)

#: Shape fields (Llama-style and GPT-2-style names) and the largest value any real model has, with room.
SHAPE_FIELDS = {"hidden_size": 1 << 20, "num_hidden_layers": 1 << 14, "num_attention_heads": 1 << 14,
                "num_key_value_heads": 1 << 14, "intermediate_size": 1 << 22, "vocab_size": 1 << 24,
                "head_dim": 1 << 14, "max_position_embeddings": 1 << 31, "n_embd": 1 << 20,
                "n_layer": 1 << 14, "n_head": 1 << 14, "n_inner": 1 << 22}
HINT = "give the config.json that came with the model"


def read_config_file(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; ModelError naming the file (and the field) when it is unusable."""
    try:
        text = read_text(path, MODEL_CONFIG_BYTES)
    except (OSError, UnicodeDecodeError) as err:
        raise ModelError(f"model config {path}: {describe(err)}",
                         HINT if isinstance(err, UnicodeDecodeError) else "give the path of the model's config.json") \
            from None
    try:
        data = load_json(text)
    except ValueProblem as err:
        raise as_error(err, f"model config {path}", ModelError) from None
    except json.JSONDecodeError as err:
        raise ModelError(f"model config {path} is not valid JSON ({err.msg} at line {err.lineno})", HINT) from None
    if not isinstance(data, dict):
        kind = {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(data), "null")
        raise ModelError(f"model config {path} holds a {kind}, not a JSON object", HINT)
    check_shape(data, f"model config {path}")
    return data


def check_shape(data: dict[str, Any], source: str) -> None:
    """ModelError unless every shape field present is an integer from 1 to its limit."""
    for name, most in SHAPE_FIELDS.items():
        if name not in data or data[name] is None:
            continue
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise ModelError(f"{source}: field '{name}' must be a whole number from 1 to {most:,} "
                             f"(got {quote(value)})", HINT, field="model")
