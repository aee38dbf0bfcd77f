"""Rows of a local file, one at a time, for the Arrow dataset that training reads (``core/data/sources.py``).

JSON Lines, CSV and parquet are read a line (or a record batch) at a time, so a file of any size costs a
few megabytes of host memory; a .json list and a .txt file are parsed whole, as ``core/data/files.py``
does (their formats cannot be split safely). Each row is yielded as
``{"_where": "line 7", "_row": <the row as JSON text> | None, "_bad": None | "not valid JSON (...)"}``:
as text, so rows whose fields change type from one line to the next (which Arrow cannot hold in one
column) still reach the row checks, which give today's messages. Problems that spoil the whole file
(not UTF-8, UTF-16, binary, empty) are the same ``DataError`` lines as ``files.read_rows`` gives.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterator

from zerotui.core.data import files
from zerotui.core.errors import DataError
from zerotui.core.safe_read import open_file

Record = dict[str, Any]
#: Part of the raw cache key: bump when what a record holds changes.
VERSION = 1
#: Rows taken from a parquet file at a time.
PARQUET_BATCH = 4096


def check_head(path: Path) -> None:
    """The whole-file refusals, decided from the first 64 KiB: empty, UTF-16, binary."""
    with open_file(path) as fh:
        head = fh.read(1 << 16)
        rest = fh.read(1) if not head.strip() else b"x"
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise DataError(f"data file {path} is UTF-16 text, not UTF-8",
                        f"convert it, e.g. `iconv -f utf-16 -t utf-8 {path.name} > fixed{path.suffix}`")
    if b"\x00" in head[:8192]:
        raise DataError(f"data file {path} is binary (it holds NUL bytes), not {path.suffix or 'text'} text",
                        files.FORMATS_HINT)
    if not head.strip() and not rest:
        raise DataError(f"data file {path} is empty", files.FORMATS_HINT)


def records(path_text: str, suffix: str, text_field: str, fingerprint: str) -> Iterator[Record]:
    """Every row of the file as a record (see the module docstring). ``fingerprint`` is unused here: it
    is part of the arguments so that datasets' generator cache is keyed by the file's size and mtime."""
    del fingerprint
    path = Path(path_text)
    if suffix == ".jsonl":
        yield from _jsonl(path)
    elif suffix == ".csv":
        yield from _csv(path)
    elif suffix == ".parquet":
        yield from _parquet(path)
    else:
        text = files._read_text(path)
        if not text.strip():
            raise DataError(f"data file {path} is empty", files.FORMATS_HINT)
        rows, where, bad = (files._parse_json(text, path) if suffix == ".json"
                            else files._parse_txt(text, text_field))
        for ex in bad.examples:  # a .json that is really JSON Lines: its broken lines
            w, _, why = ex.partition(": ")
            yield {"_where": w, "_row": None, "_bad": why}
        for row, w in zip(rows, where):
            yield _good(row, w)


def _good(row: Any, where: str) -> Record:
    return {"_where": where, "_row": json.dumps(row, ensure_ascii=False, default=str), "_bad": None}


def _jsonl(path: Path) -> Iterator[Record]:
    with open_file(path) as fh:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise DataError(
                    f"data file {path} is not UTF-8 text (byte 0x{raw[err.start]:02x} on line {n})",
                    f"convert it to UTF-8, e.g. `iconv -f latin1 -t utf-8 {path.name} > fixed{path.suffix}`") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                yield {"_where": f"line {n}", "_row": None, "_bad": f"not valid JSON ({err.msg})"}
                continue
            except (ValueError, RecursionError) as err:  # a 5,001-digit number; brackets nested thousands deep
                yield {"_where": f"line {n}", "_row": None, "_bad": f"not usable JSON ({files._why(err)})"}
                continue
            yield _good(row, f"line {n}")


def _csv(path: Path) -> Iterator[Record]:
    with open_file(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        reader = csv.DictReader(text)
        try:
            header = reader.fieldnames or []
            for row in reader:
                where = f"line {reader.line_num}"
                if None in row:  # more fields than the header
                    yield {"_where": where, "_row": None,
                           "_bad": f"{len(header) + len(row[None])} fields, the header has {len(header)}"}
                elif any(v is None for v in row.values()):
                    yield {"_where": where, "_row": None, "_bad": f"fewer fields than the header's {len(header)}"}
                else:
                    yield _good(row, where)
        except UnicodeDecodeError:
            raise DataError(f"data file {path} is not UTF-8 text (near line {reader.line_num + 1})",
                            f"convert it to UTF-8, e.g. `iconv -f latin1 -t utf-8 {path.name} > fixed.csv`") from None


def _parquet(path: Path) -> Iterator[Record]:
    try:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
    except Exception as err:  # noqa: BLE001 - pyarrow raises its own hierarchy (ArrowInvalid, OSError, ...)
        raise DataError(f"data file {path} is not a readable parquet file ({str(err).splitlines()[0]})",
                        "write it with pandas.DataFrame.to_parquet or datasets' to_parquet") from None
    if pf.metadata.num_rows == 0:
        raise DataError(f"data file {path} has no rows", files.FORMATS_HINT)
    n = 0
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH):
        for row in batch.to_pylist():
            n += 1
            yield _good(row, f"row {n}")
