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
    """ModelError unless every shape field present is an integer from 1 to its limit, and the attention
    heads divide as every decoder needs (``check_heads``)."""
    for name, most in SHAPE_FIELDS.items():
        if name not in data or data[name] is None:
            continue
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise ModelError(f"{source}: field '{name}' must be a whole number from 1 to {most:,} "
                             f"(got {quote(value)})", HINT, field="model")
    check_heads(data, source)


#: Fields some architectures use to give one head's width themselves: with one of them the hidden size
#: need not be heads x head width (Gemma's head_dim, ChatGLM's kv_channels, T5's d_kv, DeepSeek's MLA).
HEAD_WIDTH_FIELDS = ("head_dim", "kv_channels", "attention_head_size", "head_size", "d_kv", "qk_head_dim",
                     "qk_nope_head_dim", "v_head_dim")


def _count(data: dict[str, Any], *names: str) -> tuple[str, Any]:
    """The first of ``names`` that ``data`` holds a value for, and that value (("", None) if none)."""
    for name in names:
        if data.get(name) is not None:
            return name, data[name]
    return "", None


def check_heads(data: dict[str, Any], source: str) -> None:
    """ModelError when the attention heads cannot split the model as the config says.

    transformers builds such a model without a word (on the meta device too) and fails later, at the
    first forward, or silently computes with narrower heads: 32 query heads over 7 key/value heads
    repeats each key/value head 4 times, 28 heads for 32; a hidden size of 4,100 over 32 heads gives
    heads of 128 that cover 4,096 of it. Counts that are not integers are left to check_shape (files) or
    transformers (a hub config it has already read).
    """
    heads_name, heads = _count(data, "num_attention_heads", "n_head")
    kv_name, kv = _count(data, "num_key_value_heads")
    hidden_name, hidden = _count(data, "hidden_size", "n_embd")
    for name, value in ((heads_name, heads), (kv_name, kv), (hidden_name, hidden)):
        if _whole(value) and value < 1:
            raise ModelError(f"{source}: field '{name}' must be at least 1 (got {value})", HINT, field="model")
    if not _whole(heads) or heads > SHAPE_FIELDS["num_attention_heads"]:
        return  # past any real model's count: check_shape's to refuse (and too many to look for divisors)
    if _whole(kv) and heads % kv:
        raise ModelError(f"{source}: {heads_name} ({heads}) is not a multiple of {kv_name} ({kv}): each "
                         "key/value head must serve the same number of query heads",
                         f"{kv_name} must divide {heads}, e.g. {_near(_divisors(heads), kv)}; {HINT}",
                         field="model")
    if _whole(hidden) and hidden % heads and _count(data, *HEAD_WIDTH_FIELDS)[1] is None:
        width = hidden // heads
        raise ModelError(f"{source}: {hidden_name} ({hidden:,}) is not a multiple of {heads_name} ({heads}), "
                         "and no head_dim says how wide a head is",
                         f"make {hidden_name} a multiple of {heads} such as "
                         f"{_near([width * heads, (width + 1) * heads], hidden)}, or give head_dim; {HINT}",
                         field="model")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _near(choices: list[int], value: int) -> str:
    """The one or two of ``choices`` closest to ``value``, below and above it ("4 or 8")."""
    below = [c for c in choices if 0 < c < value]
    above = [c for c in choices if c > value]
    picked = ([max(below)] if below else []) + ([min(above)] if above else [])
    return " or ".join(f"{c:,}" for c in picked)
