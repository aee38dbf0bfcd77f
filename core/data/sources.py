"""Each entry of a plan's data as an Arrow-backed, memory-mapped ``datasets.Dataset``.

Local files (.jsonl, .csv, .parquet, .json, .txt) are read by ``core/data/stream.py`` through
``Dataset.from_generator`` into zerotui's cache (once per file version: the cache is keyed by path, size
and mtime); ``save_to_disk`` folders are opened with ``load_from_disk``; ``hub:ID[:CONFIG]`` entries come
from the local Hugging Face cache, offline, with the entry's split (default train) and config. Nothing
here holds the rows in Python lists: the tables stay on disk and are paged in as they are read.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from zerotui.core.data import cache_bound, files, stream
from zerotui.core.errors import DataError
from zerotui.core.paths import cache_root
from zerotui.core.plan.data_source import DataSource
from zerotui.core.safe_read import describe, open_regular

#: Columns of a dataset read by ``stream``: the row as JSON text, where it was, why it was unreadable.
RAW_COLUMNS = ("_where", "_row", "_bad")
FOLDER_HINT = ("give a .jsonl/.csv/.parquet file or a folder written by datasets' save_to_disk "
               "(it holds dataset_info.json or dataset_dict.json)")


@dataclass
class Source:
    label: str            # as shown to the user: the path or hub id (with split/config)
    dataset: Any          # datasets.Dataset
    fingerprint: str      # changes when the data changes
    weight: float

    @property
    def raw(self) -> bool:
        """Rows read by ``stream`` (JSON text per row) rather than a table's own columns."""
        return tuple(self.dataset.column_names) == RAW_COLUMNS


def quiet() -> None:
    """No progress bars from datasets: the worker log and the terminal get zerotui's own phases."""
    import datasets

    datasets.disable_progress_bars()


def fingerprint_of(src: DataSource) -> str:
    """The entry's fingerprint without reading its rows (for the key of the assembled cache)."""
    path = Path(files.resolve_source(src.path)).expanduser()
    if src.path.startswith("hub:") or not path.is_file():  # folders, hub ids; and what is refused, by name
        return open_source(src).fingerprint
    st = path.stat()
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"


def open_source(src: DataSource, text_field: str = "text", cache: Optional[Path] = None) -> Source:
    """The entry as a dataset; local files are read into ``cache`` (default: zerotui's cache)."""
    quiet()
    source = files.resolve_source(src.path)
    if source.startswith("hub:"):
        return _hub(src, source[4:])
    path = Path(source).expanduser()
    if not path.exists():
        raise DataError(f"data file {path} does not exist", files.FORMATS_HINT)
    if path.is_dir():
        return _folder(src, path)
    return _file(src, path, text_field, cache or cache_root() / "tokenised" / "datasets")


def _file(src: DataSource, path: Path, text_field: str, cache: Path) -> Source:
    suffix = path.suffix.lower()
    if suffix not in files.SUFFIXES:
        raise DataError(f"data file {path}: unknown type '{suffix or '(none)'}'", files.FORMATS_HINT)
    try:  # a FIFO, a device or a socket named like data: refused at once, never opened for a blocking read
        os.close(open_regular(path))
    except OSError as err:
        raise DataError(f"data file {path} {describe(err)}", files.FORMATS_HINT) from None
    if suffix != ".parquet":
        stream.check_head(path)
    st = path.stat()
    fp = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    import datasets

    features = datasets.Features({k: datasets.Value("string") for k in RAW_COLUMNS})
    kwargs = {"path_text": str(path), "suffix": suffix, "text_field": text_field, "fingerprint": fp}
    key = hashlib.sha256(f"{fp}|{suffix}|{text_field}|{stream.VERSION}".encode()).hexdigest()[:32]
    try:
        ds = datasets.Dataset.from_generator(stream.records, features=features, gen_kwargs=kwargs,
                                             cache_dir=str(cache), fingerprint=key)
    except Exception as err:  # noqa: BLE001 - datasets wraps what the generator raised in DatasetGenerationError
        cause = _cause(err, DataError) or _cause(err, OSError)  # a row problem, or the cache's disk is full
        if cause is not None:
            raise cause from None
        raise DataError(f"data file {path} could not be read ({_first_line(err)})", files.FORMATS_HINT) from None
    cache_bound.touch_dataset(cache, (f["filename"] for f in ds.cache_files))
    return Source(str(path), ds, fp, src.weight)


def _folder(src: DataSource, path: Path) -> Source:
    if not any((path / n).is_file() for n in ("dataset_info.json", "dataset_dict.json", "state.json")):
        raise DataError(f"data {path} is a folder, not a file", FOLDER_HINT)
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as err:  # noqa: BLE001 - a torn or foreign folder: datasets' FileNotFoundError / ArrowInvalid / JSON errors
        raise DataError(f"data folder {path} is not a readable save_to_disk dataset ({_first_line(err)})",
                        FOLDER_HINT) from None
    ds = _pick_split(ds, src, str(path))
    return Source(src.label() if src.split else str(path), ds, f"{path.resolve()}|{ds._fingerprint}", src.weight)


def _hub(src: DataSource, spec: str) -> Source:
    name, _, config = spec.partition(":")
    config = src.config or config or None
    if not name:
        raise DataError("hub: needs a dataset id, e.g. hub:tatsu-lab/alpaca", files.FORMATS_HINT)
    from zerotui.core.hardware.hub import go_offline

    go_offline()  # no network: the cache answers at once, instead of a minute of retries
    offline = os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1"
    split = src.split or "train"
    try:
        import datasets

        ds = datasets.load_dataset(name, config, split=split)
    except Exception as err:  # noqa: BLE001 - network, missing repo, bad config or split: all end the same way for the user
        why = "offline mode is on and it is not in the local cache" if offline else _first_line(err)
        raise DataError(f"hub dataset {name} could not be loaded: {why}",
                        "check the id, config and split on huggingface.co and the network; offline, download "
                        "it first or give a local .jsonl/.parquet file") from None
    fp = hashlib.sha256(f"{name}|{config}|{split}|{ds._fingerprint}".encode()).hexdigest()
    return Source(f"hub:{name}" + (f" ({config}, {split})" if config else f" ({split})"), ds, fp, src.weight)


def _pick_split(ds: Any, src: DataSource, where: str) -> Any:
    import datasets

    if isinstance(ds, datasets.DatasetDict):
        split = src.split or "train"
        if split not in ds:
            raise DataError(f"data folder {where} has no split '{split}' (it has {', '.join(ds)})",
                            "name one of those as the entry's split")
        return ds[split]
    if src.split:
        raise DataError(f"data folder {where} holds one dataset, not splits: split '{src.split}' does not apply",
                        "remove the split from the entry")
    return ds


def _cause(err: BaseException, kind: type) -> Optional[BaseException]:
    seen: Optional[BaseException] = err
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _first_line(err: BaseException) -> str:
    return (str(err).splitlines() or [type(err).__name__])[0][:200]
