"""Where the model step finds models to offer: the built-in tiny model, the well-known architectures of
``core.model.spec`` (planning without weights), and models already in the Hugging Face cache.

The cache layout (``<hub cache>/models--<org>--<name>/snapshots/<revision>/config.json``) is
huggingface_hub's documented cache structure; reading it with the standard library keeps the wizard from
importing huggingface_hub (and its dependencies) just to list folders.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class ModelChoice:
    value: str          # what goes into the Plan's ``model`` field
    label: str          # what the list shows
    group: str          # built-in | known | cache


def hub_cache_dir() -> Path:
    """The hub cache folder, resolved the way huggingface_hub does (HF_HUB_CACHE, then HF_HOME/hub)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def cached_models(cache: Optional[Path] = None) -> list[ModelChoice]:
    """Hub ids of the models in the cache that have at least one snapshot with a config.json."""
    root = cache or hub_cache_dir()
    try:
        entries = sorted(p for p in root.iterdir() if p.name.startswith("models--"))
    except OSError:
        return []
    out = []
    for entry in entries:
        hub_id = entry.name[len("models--"):].replace("--", "/")
        try:
            snapshots = list((entry / "snapshots").iterdir())
        except OSError:
            continue
        if any((s / "config.json").exists() for s in snapshots):
            out.append(ModelChoice(hub_id, f"{hub_id}  (in the HF cache)", "cache"))
    return out


def known_choices() -> list[ModelChoice]:
    from zerotui.core.model.spec import known_models
    names = known_models()
    return [ModelChoice(n, f"{n}  (planning only: no weights needed)", "known") for n in names if n != "tiny"]


def all_choices(cache: Optional[Path] = None) -> list[ModelChoice]:
    return ([ModelChoice("tiny", "tiny  (built-in Llama-family model: trains on a CPU in seconds)", "built-in")]
            + cached_models(cache) + known_choices())
