"""ModelSpecs of config.json bodies kept on disk, so planning a local or cached model does not import
transformers and build the model on the meta device every time (~3 s here, ~10 s on a GPU box's disk,
paid by every `zerotui train`, `estimate` and `fit` before anything else happened).

The key is the config body, transformers' version (it decides which modules a config builds) and
whether the folder's own code was allowed. A damaged or foreign cache file is ignored and rebuilt.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Optional

from zerotui.core.paths import cache_root

VERSION = 1


def _transformers_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return "?"


def _path(body_key: str, trust_remote_code: bool) -> Path:
    blob = json.dumps({"v": VERSION, "config": body_key, "transformers": _transformers_version(),
                       "remote": trust_remote_code}, sort_keys=True)
    return cache_root() / "model-specs" / f"{hashlib.sha256(blob.encode()).hexdigest()[:32]}.json"


def load(body_key: str, trust_remote_code: bool) -> Optional[dict[str, Any]]:
    """The stored spec fields for this config (lists where the spec has tuples), or None."""
    try:
        data = json.loads(_path(body_key, trust_remote_code).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("fields"), dict) else None


def store(body_key: str, trust_remote_code: bool, spec: Any) -> None:
    """Best effort: a cache that cannot be written only costs the next command its seconds."""
    path = _path(body_key, trust_remote_code)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"fields": dataclasses.asdict(spec)}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def as_spec(cls: Any, fields: dict[str, Any], name: str, source: str) -> Optional[Any]:
    """A ``cls`` (ModelSpec) from stored fields, with this call's display name and source; None when the
    stored fields do not fit the class any more."""
    try:
        f = dict(fields, name=name, source=source)
        f["linear_modules"] = tuple(tuple(x) for x in f.get("linear_modules", ()))
        f["param_shapes"] = tuple(tuple(x) for x in f.get("param_shapes", ()))
        return cls(**f)
    except (TypeError, ValueError):
        return None
