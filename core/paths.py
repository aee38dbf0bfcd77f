"""Where zerotui keeps things: runs, saved presets, its cache, and the files it ships.

Every location a user can move has one environment variable, read here and nowhere else:
``ZEROTUI_RUNS_DIR``, ``ZEROTUI_PRESETS_DIR``, ``ZEROTUI_CACHE_DIR``. The defaults follow the platform's
conventions (platformdirs: ``~/.local/share``, ``~/.config``, ``~/.cache`` on Linux).
"""
from __future__ import annotations

import os
from pathlib import Path

#: Files shipped inside the package: the sample dataset and the tiny model's tokenizer.
ASSETS = Path(__file__).parent / "assets"
SAMPLE_FILE = ASSETS / "sample.jsonl"
TINY_TOKENIZER_FILE = ASSETS / "tiny_tokenizer.json"


def _from_env(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def default_runs_dir() -> Path:
    """Run folders: ``$ZEROTUI_RUNS_DIR``, else the user data folder + /runs."""
    env = _from_env("ZEROTUI_RUNS_DIR")
    if env is not None:
        return env
    import platformdirs

    return Path(platformdirs.user_data_dir("zerotui")) / "runs"


def user_presets_dir() -> Path:
    """Saved presets: ``$ZEROTUI_PRESETS_DIR``, else the user config folder + /presets."""
    env = _from_env("ZEROTUI_PRESETS_DIR")
    if env is not None:
        return env
    import platformdirs

    return Path(platformdirs.user_config_dir("zerotui")) / "presets"


def cache_root() -> Path:
    """zerotui's cache (tokenised data, the materialised tiny model): ``$ZEROTUI_CACHE_DIR``, else the
    user cache folder."""
    env = _from_env("ZEROTUI_CACHE_DIR")
    if env is not None:
        return env
    import platformdirs

    return Path(platformdirs.user_cache_dir("zerotui"))


def builtin_presets_dir() -> Path:
    """The presets shipped with zerotui (package ``zerotui.presets``)."""
    import zerotui.presets

    return Path(zerotui.presets.__file__).parent
