"""Weights to sharded safetensors one shard at a time: the Hugging Face layout (``model.safetensors``, or
``model-0000k-of-0000n.safetensors`` + ``model.safetensors.index.json``) that ``from_pretrained`` loads.

The tensors come in lazily — DeepSpeed's ``GatheredTensor`` (ZeRO-3 partitions gathered on
``.contiguous()``) or memory-mapped ones — so at most one shard is ever materialised. The split is
huggingface_hub's (planned on empty tensors, so nothing is read to plan it).
"""
from __future__ import annotations

import gc
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

INDEX = "model.safetensors.index.json"


def _plain(t: Any, dtype: Any) -> Any:
    tensor = t.contiguous()
    return tensor.to(dtype) if tensor.is_floating_point() and tensor.dtype != dtype else tensor


def write_shards(tensors: Mapping[str, Any], folder: Path, dtype: Any, max_shard_size: int,
                 drop: frozenset[str] = frozenset()) -> list[str]:
    """Write ``tensors`` ({name: tensor or lazy tensor}) minus ``drop`` (tied duplicates) into
    ``folder`` as ``dtype`` (floating tensors only); returns the file names written."""
    import torch
    from huggingface_hub import split_torch_state_dict_into_shards
    from safetensors.torch import save_file

    names = [n for n in tensors if n not in drop]
    planned = {n: torch.empty(tuple(tensors[n].shape),
                              dtype=dtype if tensors[n].dtype.is_floating_point else tensors[n].dtype,
                              device="meta") for n in names}
    split = split_torch_state_dict_into_shards(planned, filename_pattern="model{suffix}.safetensors",
                                               max_shard_size=max_shard_size)
    for filename, members in split.filename_to_tensors.items():
        shard = {n: _plain(tensors[n], dtype) for n in members}
        save_file(shard, str(folder / filename), metadata={"format": "pt"})
        del shard
        gc.collect()  # the gathered fp32 pieces of this shard go before the next one is gathered
    files = list(split.filename_to_tensors)
    if split.is_sharded:
        index = {"metadata": {**split.metadata}, "weight_map": split.tensor_to_filename}
        (folder / INDEX).write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        files.append(INDEX)
    return files


def shard_files(folder: Path) -> list[Path]:
    """The safetensors files of a model folder, in index order."""
    index = folder / INDEX
    if index.exists():
        names = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        return [folder / n for n in names]
    return [folder / "model.safetensors"]


def saved_dtypes(folder: Path) -> dict[str, int]:
    """{dtype name: tensor count} over every shard, read from the headers only."""
    from safetensors import safe_open

    counts: dict[str, int] = {}
    for path in shard_files(folder):
        with safe_open(str(path), framework="pt") as fh:
            for name in fh.keys():  # noqa: SIM118 - a safetensors handle, not a dict
                key = str(fh.get_slice(name).get_dtype())
                counts[key] = counts.get(key, 0) + 1
    return counts
