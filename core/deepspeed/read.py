"""Reading a ds_config.json: strict JSON, or the relaxed JSON (comments, trailing commas) DeepSpeed also
reads, with the file and line named in every error."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zerotui.core.errors import ConfigImportError


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
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigImportError(f"{p}: no such file", "give the path of a ds_config.json") from None
    except IsADirectoryError:
        raise ConfigImportError(f"{p}: is a folder, not a ds_config file", "give the path of a ds_config.json") from None
    except UnicodeDecodeError as err:
        raise ConfigImportError(f"{p}: not UTF-8 text (byte {err.start})", "save the file as UTF-8 JSON") from None
    except OSError as err:
        raise ConfigImportError(f"{p}: cannot read ({err.strerror or err})", "check the path and its permissions") from None
    if not text.strip():
        raise ConfigImportError(f"{p}: the file is empty", "a ds_config is a JSON object like {\"zero_optimization\": {...}}")
    dups: list[str] = []
    warnings: list[str] = []
    try:
        data = json.loads(text, object_pairs_hook=_dups_hook(dups))
    except json.JSONDecodeError as err:
        import hjson

        try:
            data = hjson.loads(text, object_pairs_hook=_dups_hook(dups))
        except Exception:  # noqa: BLE001 - hjson raises several types; the strict error is the clearer one
            raise ConfigImportError(f"{p}: not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}",
                                    "fix the JSON syntax (quotes around keys, commas between items)") from None
        warnings.append(f"{p.name} is not strict JSON (comments or trailing commas): DeepSpeed reads it, but "
                        "the HF Trainer and accelerate do not; zerotui's exported ds_config.json is strict JSON")
    if not isinstance(data, dict):
        raise ConfigImportError(f"{p}: expected a JSON object of DeepSpeed settings, got a {_json_type(data)}",
                                "a ds_config looks like {\"train_micro_batch_size_per_gpu\": 1, ...}")
    warnings += [f"key '{k}' appears more than once; the last value is used (DeepSpeed refuses duplicate keys)"
                 for k in dict.fromkeys(dups)]
    return data, warnings


def _json_type(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")
