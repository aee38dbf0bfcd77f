"""Does a merge / export fit this machine? Host RAM and the output disk, checked before anything loads.

A 70B LoRA merge that runs out of RAM an hour in (or fills the disk on the last shard) costs more than a
refusal up front, so the bytes each step needs are estimated from the plan's model shape (no weights
read) and compared with what psutil says is available and what the output folder's disk has free.

What each kind of work holds at its peak (P weights, b bytes per weight in the output dtype, S one
shard), from how each step loads and writes; benchmarks/merge_rss.py measures the LoRA case:

- LoRA merge: the base in the output dtype (loaded shard by shard from memory-mapped safetensors),
  the adapters folded in place, then one shard serialised: P*b + S.
- QLoRA merge: the 4-bit base (~0.5 byte a weight) while it is dequantised into P*b, plus a shard.
- ZeRO-3 consolidation (DeepSpeed's lazy mode): the fp32 masters stay memory-mapped; one shard is
  gathered in fp32 and cast, so S*4/b + S. ZeRO-1/2: DeepSpeed concatenates each parameter group's
  fp32 partitions first, so P*4 + S.
- 4-bit and GGUF exports are written from the merged 16-bit folder, which is staged on the output disk.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from zerotui.core.errors import HardwareError, StorageError
from zerotui.core.sizes import format_bytes

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
#: A 4-bit NF4 folder is 0.5 byte a quantised weight plus its 16-bit embeddings and norms: at most
#: about half the 16-bit size for every Llama shape in core/model/spec.py.
FOUR_BIT_FRACTION = 0.5


@dataclass
class Need:
    ram: int
    disk: int
    what: str  # "a bf16 lora merge of 6.74 billion weights as safetensors", for the refusal line
    dtype: str = "bf16"


#: The tokenizer and config files beside the weights: up to 33 MB (Gemma 3's tokenizer.json; Llama 3's is
#: 9 MB). Left out, a merge of the tiny model onto a 2 MB disk passed the check and filled the disk.
TOKENIZER_FILES = 40 << 20


def estimate_need(params: int, dtype: str, shard: int, kind: str, stage: int = 3,
                  fmt: str = "safetensors") -> Need:
    """Bytes of RAM and of output disk for ``kind`` ("lora", "qlora", "zero", "final") of ``params``
    weights saved as ``dtype`` in ``fmt`` with shards of at most ``shard`` bytes."""
    b = DTYPE_BYTES[dtype]
    size = params * b
    shard = min(shard, size)
    if kind == "zero":
        ram = (params * 4 if stage < 3 else shard * 4 // b) + shard
    elif kind == "qlora":
        ram = size + params // 2 + shard
    else:  # a LoRA merge, or a full run's final/ re-saved: one copy in the output dtype
        ram = size + shard
    disk = size
    if fmt == "bnb-4bit":
        disk = size + int(size * FOUR_BIT_FRACTION)  # the staged 16-bit folder, then the 4-bit one
    elif fmt == "gguf":
        disk = 2 * size
    disk += TOKENIZER_FILES
    return Need(ram, disk, f"a {dtype} {kind} merge of {_count(params)} weights as {fmt}", dtype)


def _count(n: int) -> str:
    """6.74e9 -> '6.74 billion'; the tiny model's 1M was '0.00e9'."""
    for size, word in ((1e9, "billion"), (1e6, "million"), (1e3, "thousand")):
        if n >= size:
            return f"{n / size:.2f} {word}"
    return str(n)


def available_ram() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def free_disk(folder: Path) -> int:
    """Free bytes on the disk that holds ``folder`` (its nearest existing parent)."""
    p = Path(folder)
    while not p.exists():
        p = p.parent
    return int(shutil.disk_usage(p).free)


def check_room(need: Need, out: Path, force: bool = False) -> dict:
    """Refuse when ``need`` exceeds the RAM available (HardwareError) or the free disk at ``out``
    (StorageError);
    ``force`` skips the RAM check only (swap, or memory another process is about to free, may cover
    it), never the disk one: a disk that fills leaves nothing usable. Returns what was compared."""
    ram, disk = available_ram(), free_disk(out.parent)
    if need.ram > ram and not force:
        raise HardwareError(
            f"{need.what} needs about {format_bytes(need.ram)} of RAM; {format_bytes(ram)} is available",
            ("--dtype bf16 halves it, " if need.dtype == "fp32" else "free memory or use a machine with more RAM, ")
            + "or --force to try anyway (swap may cover it)")
    if need.disk > disk:  # the disk's state, not the input: exit 1 like any full disk (docs/command_line.md)
        raise StorageError(
            f"{need.what} needs about {format_bytes(need.disk)} of disk at {out.parent}; "
            f"{format_bytes(disk)} is free there",
            "give -o a folder on a disk with more room" + (", or --dtype bf16 (half)" if need.dtype == "fp32" else ""))
    return {"ram_needed": need.ram, "ram_available": ram, "disk_needed": need.disk, "disk_free": disk,
            "ram_check": "skipped (--force)" if force and need.ram > ram else "ok"}
