"""The first rows of one data entry, read by the code training reads it with, and no more than those.

A ``save_to_disk`` folder and a hub dataset are opened as the worker opens them (``sources.open_source``:
memory-mapped Arrow, nothing loaded) and their first rows taken (``arrow_tokenise.sample_rows``). A
local file is read by the worker's own row reader (``stream.records``) but only until ``n`` rows have
come: ``open_source`` would first copy the whole file into the cache. A hub dataset is read only from the
local cache: when the hub can be reached, loading it would download all of it, so that is refused with a
line that says when it will be read.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from zerotui.core.data import files, stream
from zerotui.core.errors import DataError
from zerotui.core.plan.data_source import DataSource

#: Rows read past unreadable ones before giving up on finding ``n`` readable rows.
SCAN_LIMIT = 1000


class NotCached(DataError):
    """A hub dataset that is not previewed: it would be downloaded now, or it is not in the local cache."""


def peek(entry: DataSource, text_field: str = "text", n: int = 20) -> tuple[list[Any], list[str]]:
    """(the first ``n`` readable rows, the first problems met on the way, as ``line 7: why``)."""
    source = files.resolve_source(entry.path)
    path = Path(source).expanduser()
    if not source.startswith("hub:") and path.is_file():
        return _file_rows(path, text_field, n)
    if source.startswith("hub:"):
        from zerotui.core.hardware.hub import go_offline

        if not go_offline():
            raise NotCached(f"hub dataset {source[4:]}: downloaded and previewed when the run starts",
                            "give a local file or save_to_disk folder to preview it now")
    from zerotui.core.data.arrow_tokenise import sample_rows
    from zerotui.core.data.sources import open_source

    try:
        src = open_source(entry, text_field)
    except DataError as err:
        if source.startswith("hub:"):  # not in the cache: the run says so too, but a preview is no verdict
            raise NotCached(err.message, err.hint) from None
        raise
    return [row for row, _ in sample_rows(src, n)], []


def _file_rows(path: Path, text_field: str, n: int) -> tuple[list[Any], list[str]]:
    suffix = path.suffix.lower()
    if suffix not in files.SUFFIXES:
        raise DataError(f"data file {path}: unknown type '{suffix or '(none)'}'", files.FORMATS_HINT)
    if suffix != ".parquet":
        stream.check_head(path)
    rows, problems = [], []
    for rec in itertools.islice(stream.records(str(path), suffix, text_field, ""), SCAN_LIMIT):
        if rec["_row"] is None:
            problems.append(f"{rec['_where']}: {rec['_bad']}")
            continue
        rows.append(json.loads(rec["_row"]))
        if len(rows) >= n:
            break
    return rows, problems
