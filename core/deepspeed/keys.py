"""Which ds_config keys the installed DeepSpeed knows, asked of DeepSpeed itself.

DeepSpeed's top-level parser does not reject unknown keys: it looks up the ones it knows and ignores
the rest, so a misspelt or invented key (``gradient_hp_compression``, copied from a widely shared
article) silently does nothing. To list what it knows, ``DeepSpeedConfig`` parses a probe config wrapped
in a dict that records every key looked up. Sections parsed by pydantic models (``zero_optimization``,
``fp16``, the monitors, ...) are checked against those models' fields. Both come from the installed
DeepSpeed, so a new release's keys are known without editing this file.

Importing DeepSpeed costs seconds and prints on stdout, so this module is imported only by the ds_config
importer and tests, and ``quiet_deepspeed()`` keeps DeepSpeed's console output off stdout.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import io
import logging
import sys
from typing import Any, Iterator, Optional


@contextlib.contextmanager
def quiet_deepspeed() -> Iterator[None]:
    """Import DeepSpeed without its messages reaching stdout (``zerotui import x.json > plan.yaml`` must
    stay clean), and silence its warnings while the block runs. DeepSpeed's logger writes to the
    sys.stdout of the moment it was created, so it is created against a buffer and then pointed at
    stderr for anything it logs later."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        import deepspeed.runtime.config  # noqa: F401  (creates DeepSpeed's logger)
    ds_logger = logging.getLogger("DeepSpeed")
    for handler in ds_logger.handlers:
        if isinstance(handler, logging.StreamHandler) and handler.stream is buf:
            handler.setStream(sys.stderr)
    level = ds_logger.level
    ds_logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        ds_logger.setLevel(level)


class _Recorder(dict):
    """A dict that notes every key looked up in it (and in the dicts nested in it)."""

    def __init__(self, data: dict, path: tuple, seen: set) -> None:
        super().__init__({k: _Recorder(v, path + (k,), seen) if isinstance(v, dict) else v
                          for k, v in data.items()})
        self._path, self._seen = path, seen

    def _note(self, key: Any) -> None:
        self._seen.add(self._path + (key,))

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self._note(key)
        return super().__contains__(key)

    def keys(self):  # DeepSpeed also asks `KEY in param_dict.keys()`
        outer = self

        class _Keys:
            def __contains__(self, key) -> bool:
                outer._note(key)
                return dict.__contains__(outer, key)

            def __iter__(self):
                return iter(dict.keys(outer))

            def __len__(self) -> int:
                return dict.__len__(outer)

        return _Keys()


# Sections whose sub-keys DeepSpeed reads with lookups (recorded by the probe).
_PROBE = {
    "train_micro_batch_size_per_gpu": 1,
    "activation_checkpointing": {},
    "aio": {},
    "optimizer": {"type": "AdamW", "params": {}},
    "scheduler": {"type": "WarmupLR", "params": {}},
}


@functools.lru_cache(maxsize=1)
def _probe() -> frozenset[tuple]:
    with quiet_deepspeed():
        from deepspeed.runtime.config import DeepSpeedConfig

        seen: set = set()
        DeepSpeedConfig(_Recorder(copy.deepcopy(_PROBE), (), seen))
    return frozenset(seen)


def removed_keys() -> dict[str, str]:
    """Keys this DeepSpeed refuses because the feature was removed ('zero_optimization.x' for ZeRO keys),
    with DeepSpeed's own explanation."""
    with quiet_deepspeed():
        import deepspeed.runtime.config as ds_config
    out = dict(getattr(ds_config, "_REMOVED_TOP_LEVEL_CONFIG_KEYS", {}))
    out.update({f"zero_optimization.{k}": v
                for k, v in getattr(ds_config, "_REMOVED_ZERO_CONFIG_KEYS", {}).items()})
    return out


@functools.lru_cache(maxsize=1)
def known_top_level_keys() -> frozenset[str]:
    """Top-level keys the installed DeepSpeed reads (removed features excluded)."""
    removed = removed_keys()
    return frozenset(p[0] for p in _probe() if len(p) == 1 and p[0] not in removed)


def _model_keys(model: Any) -> frozenset[str]:
    names = set()
    for name, field in model.model_fields.items():
        names.add(name)
        if field.alias:
            names.add(field.alias)
    return frozenset(names)


#: Sections DeepSpeed reads through one of its pydantic models, which forbid keys they do not know (its
#: ``DeepSpeedConfigModel``: ``extra="forbid"``): an unknown key there is refused. Every other section is
#: read key by key with ``dict.get`` (``aio``, ``activation_checkpointing``...), so an unknown key in it is
#: ignored without a word.
STRICT_SECTIONS = frozenset({"zero_optimization", "zero_optimization.offload_optimizer",
                             "zero_optimization.offload_param", "fp16", "bf16", "bfloat16", "tensorboard",
                             "wandb", "csv_monitor", "comet"})


def refuses_unknown_keys(section: str) -> bool:
    """Whether DeepSpeed refuses a config with a key it does not know in ``section`` (a dotted path)."""
    return section in STRICT_SECTIONS


@functools.lru_cache(maxsize=None)
def known_section_keys(section: str) -> Optional[frozenset[str]]:
    """Sub-keys DeepSpeed accepts in ``section`` (a dotted path), or None when it does not check them
    (free-form blocks such as ``optimizer.params``, or sections zerotui has no way to ask about)."""
    with quiet_deepspeed():
        from deepspeed.monitor.config import CometConfig, CSVConfig, TensorBoardConfig, WandbConfig
        from deepspeed.runtime.precision_config import DeepSpeedBF16Config, DeepSpeedFP16Config
        from deepspeed.runtime.zero.config import DeepSpeedZeroConfig
        from deepspeed.runtime.zero.offload_config import (DeepSpeedZeroOffloadOptimizerConfig,
                                                           DeepSpeedZeroOffloadParamConfig)
    models = {
        "zero_optimization": DeepSpeedZeroConfig,
        "zero_optimization.offload_optimizer": DeepSpeedZeroOffloadOptimizerConfig,
        "zero_optimization.offload_param": DeepSpeedZeroOffloadParamConfig,
        "fp16": DeepSpeedFP16Config,
        "bf16": DeepSpeedBF16Config,
        "bfloat16": DeepSpeedBF16Config,
        "tensorboard": TensorBoardConfig,
        "wandb": WandbConfig,
        "csv_monitor": CSVConfig,
        "comet": CometConfig,
    }
    assert set(models) == STRICT_SECTIONS  # one list of the sections a model checks
    if section in models:
        return _model_keys(models[section])
    parts = tuple(section.split("."))
    found = frozenset(p[len(parts)] for p in _probe() if len(p) == len(parts) + 1 and p[:len(parts)] == parts)
    return found or None


def deepspeed_rejects(config: dict[str, Any]) -> Optional[str]:
    """None if DeepSpeed's own parser (``DeepSpeedConfig``) accepts ``config``, else its complaint.

    ``train_batch_size`` is left out: without a process group DeepSpeed assumes one process, while the
    config may be for several; zerotui derives that value itself.
    """
    cfg = {k: v for k, v in copy.deepcopy(config).items() if k != "train_batch_size"}
    with quiet_deepspeed():
        from deepspeed.runtime.config import DeepSpeedConfig

        try:
            DeepSpeedConfig(cfg)
        except Exception as err:  # noqa: BLE001 - any refusal is reported, whatever its type
            return _describe(err)
    return None


def _describe(err: Exception) -> str:
    errors = getattr(err, "errors", None)
    if callable(errors):  # pydantic: name the section model, the key and the reason
        try:
            first = errors()[0]
            loc = ".".join(str(p) for p in first.get("loc", ()))
            return f"{getattr(err, 'title', type(err).__name__)}: {loc}: {first.get('msg', '')}"
        except (IndexError, TypeError, AttributeError):
            pass
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip(": ")
