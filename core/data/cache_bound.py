"""Keeps the tokenised-data cache under a size: after a run writes new entries, the least recently used
entries go until the cache fits again.

Without a bound the cache only grew: every edited file, tokenizer, ``seq_len`` or mix writes entries of
its own and nothing removed them (this project's own development machine reached 78 GB in two days and
filled its disk). An entry is what a later run can reuse whole, and what can go whole:

- ``set-<key>/``             the assembled sets of one plan (core/data/flat_store.py)
- ``src-<key>.arrow``        one tokenised source (core/data/arrow_tokenise.py)
- ``datasets/<builder>/<config>/``  one source file read into Arrow by the datasets library

"Used" is the entry's mtime: a cache hit touches it (``touch``), because atime is unreliable on
``relatime``/``noatime`` mounts. Entries used within ``RECENT_S`` are never removed, which keeps those
of the run that just wrote them and of another run preparing its data at the same time. A run that is
training reads its sets through memory maps, which survive the files' removal; its resume would
tokenise again. Removing an entry never makes a later run wrong, only slower.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from zerotui.core.errors import DataError, PlanError
from zerotui.core.sizes import format_bytes, parse_size

ENV = "ZEROTUI_CACHE_MAX"
DEFAULT_LIMIT = 20 * 2**30
RECENT_S = 15 * 60


@dataclass(frozen=True)
class Entry:
    path: Path
    size: int
    used: float  # mtime, seconds


@dataclass(frozen=True)
class Pruned:
    removed: int = 0
    freed: int = 0
    left: int = 0  # bytes the cache holds after pruning
    limit: int = DEFAULT_LIMIT

    def note(self) -> str:
        """For the data report's cache line; '' when nothing went."""
        if not self.removed:
            return ""
        return (f"cache over {format_bytes(self.limit)}: removed {self.removed} least recently used "
                f"entr{'y' if self.removed == 1 else 'ies'} ({format_bytes(self.freed)})")


def limit(env: Optional[dict] = None) -> int:
    """The bound in bytes: ``$ZEROTUI_CACHE_MAX`` (a size; 0 keeps nothing but the current run's
    entries), else ``DEFAULT_LIMIT``."""
    text = (os.environ if env is None else env).get(ENV, "").strip()
    if not text:
        return DEFAULT_LIMIT
    try:
        return parse_size(text, ENV)
    except PlanError as err:
        raise DataError(f"{ENV}={text[:40]!r} is not a size", "set it to a size such as 50GB or 200GiB, or "
                        "unset it for the default of 20 GiB") from err


def touch(path: Path) -> None:
    """Mark ``path`` as used now (best effort: a read-only cache still answers)."""
    try:
        os.utime(path)
    except OSError:
        pass


def _size(path: Path) -> int:
    if path.is_symlink() or not path.is_dir():
        try:
            return path.lstat().st_blocks * 512
        except OSError:
            return 0
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + dirs:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def _used(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def entries(root: Path) -> list[Entry]:
    """The cache's entries (module docstring); temporary folders and lock files are not entries."""
    found: list[Path] = []
    try:
        found += [p for p in root.iterdir() if (p.name.startswith("set-") and p.is_dir())
                  or (p.name.startswith("src-") and p.name.endswith(".arrow"))]
    except OSError:
        return []
    datasets = root / "datasets"
    if datasets.is_dir():
        for builder in _dirs(datasets):
            found += [c for c in _dirs(builder) if not c.name.startswith("_")]
    return [Entry(p, _size(p), _used(p)) for p in found]


def usage(root: Path) -> int:
    """Bytes the cache's entries hold (what the bound counts)."""
    return sum(e.size for e in entries(root))


def _dirs(path: Path) -> Iterable[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []


def prune(root: Path, bound: int, now: Optional[float] = None) -> Pruned:
    """Remove the least recently used entries of ``root`` until it holds at most ``bound`` bytes,
    sparing those used within ``RECENT_S``. Never raises: a cache that cannot be pruned is left."""
    now = time.time() if now is None else now
    found = sorted(entries(root), key=lambda e: e.used)
    total = sum(e.size for e in found)
    removed = freed = 0
    for e in found:
        if total <= bound:
            break
        if now - e.used < RECENT_S:
            continue
        try:
            if e.path.is_dir() and not e.path.is_symlink():
                shutil.rmtree(e.path)
            else:
                e.path.unlink()
        except OSError:
            continue
        removed, freed, total = removed + 1, freed + e.size, total - e.size
    return Pruned(removed, freed, total, bound)


def touch_dataset(datasets_root: Path, files: Iterable[str]) -> None:
    """Mark the ``datasets/<builder>/<config>/`` entry holding ``files`` (a dataset's cache files) used."""
    root = datasets_root.resolve()
    for name in files:
        for parent in Path(name).resolve().parents:
            if parent.parent.parent == root:
                touch(parent)
                return
