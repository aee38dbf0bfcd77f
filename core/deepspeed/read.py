"""Reading a ds_config.json: strict JSON, or the relaxed JSON (comments, trailing commas) DeepSpeed also
reads, with the file and line named in every error."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zerotui.core.errors import ConfigImportError
from zerotui.core.safe_read import (DS_CONFIG_BYTES, MAX_DEPTH, ValueProblem, as_error, check_value, describe,
                                    load_json, max_bracket_depth, read_text)


def _dups_hook(dups: list[str]):
    def hook(pairs: list[tuple[str, Any]]) -> dict:
        out: dict = {}
        for k, v in pairs:
            if k in out:
                dups.append(k)
            out[k] = v
        return out
    return hook


def read_ds_config(path: Path | str) -> tuple[dict[str, Any], list[str]]:
    """The config at ``path`` and warnings about its syntax. DeepSpeed reads files with hjson (comments
    and trailing commas pass); the HF Trainer / accelerate use strict ``json.load`` (accelerate
    utils/deepspeed.py, HfDeepSpeedConfig), so relaxed syntax is accepted with a warning."""
    p = Path(path)
    try:  # a regular file of bounded size (core/safe_read.py): a FIFO never blocks, 2 GB is refused
        text = read_text(p, DS_CONFIG_BYTES)
    except (OSError, UnicodeDecodeError) as err:
        hint = "save the file as UTF-8 JSON" if isinstance(err, UnicodeDecodeError) else "give the path of a ds_config.json"
        raise ConfigImportError(f"{p}: {describe(err)}", hint) from None
    if not text.strip():
        raise ConfigImportError(f"{p}: the file is empty", "a ds_config is a JSON object like {\"zero_optimization\": {...}}")
    dups: list[str] = []
    warnings: list[str] = []
    try:
        try:
            data = load_json(text, pairs_hook=_dups_hook(dups))
        except json.JSONDecodeError as err:
            data = _relaxed(text, p, err, dups)
            warnings.append(f"{p.name} is not strict JSON (comments or trailing commas): DeepSpeed reads it, "
                            "but the HF Trainer and accelerate do not; zerotui's exported ds_config.json is "
                            "strict JSON")
    except ValueProblem as err:  # nesting, 1e400, NaN, a 5,001-digit integer
        raise as_error(err, str(p), ConfigImportError) from None
    if not isinstance(data, dict):
        raise ConfigImportError(f"{p}: expected a JSON object of DeepSpeed settings, got a {_json_type(data)}",
                                "a ds_config looks like {\"train_micro_batch_size_per_gpu\": 1, ...}")
    warnings += [f"key '{k}' appears more than once; the last value is used (DeepSpeed refuses duplicate keys)"
                 for k in dict.fromkeys(dups)]
    return data, warnings


def _relaxed(text: str, p: Path, strict: json.JSONDecodeError, dups: list[str]) -> Any:
    """hjson (what DeepSpeed itself reads) with the same bounds as the strict reader."""
    import hjson

    if max_bracket_depth(text) > MAX_DEPTH:
        raise ValueProblem("", f"is nested more than {MAX_DEPTH} levels deep", "settings are a few levels deep")
    try:
        data = hjson.loads(text, object_pairs_hook=_dups_hook(dups))
    except Exception:  # noqa: BLE001 - hjson raises several types; the strict error is the clearer one
        raise ConfigImportError(f"{p}: not valid JSON at line {strict.lineno}, column {strict.colno}: {strict.msg}",
                                "fix the JSON syntax (quotes around keys, commas between items)") from None
    return check_value(data)


def _json_type(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")
