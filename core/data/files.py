"""Reading training rows from where users keep them: JSON, JSON Lines, CSV, parquet, plain text, or a
Hugging Face hub dataset.

The result is a list of rows (dicts) plus an account of the rows that could not be read, so a file
with a few broken lines still trains and the user hears which lines were skipped. Anything that
leaves nothing usable is a ``DataError`` naming the file and what was expected.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from zerotui.core.errors import DataError
from zerotui.core.safe_read import describe, open_file, open_regular

SUFFIXES = (".json", ".jsonl", ".csv", ".parquet", ".txt")
FORMATS_HINT = ("give a .json (a list of objects), .jsonl (one object a line), .csv (with a header), "
                ".parquet or .txt file, 'sample', or hub:<dataset id>")
#: How many skipped rows are described one by one (the rest are only counted).
BAD_EXAMPLES = 5


@dataclass
class BadRows:
    """Rows skipped, counted, with the first few described (``line 7: not valid JSON``)."""

    count: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, where: str, why: str) -> None:
        self.count += 1
        if len(self.examples) < BAD_EXAMPLES:
            self.examples.append(f"{where}: {why}")

    def merge(self, other: "BadRows") -> None:
        for ex in other.examples:
            if len(self.examples) < BAD_EXAMPLES:
                self.examples.append(ex)
        self.count += other.count


@dataclass
class RawRows:
    """Rows as read, before formatting. ``where[i]`` says where row i came from (for messages)."""

    source: str                      # the file path or hub id, as shown to the user
    rows: list[Any]
    where: list[str]
    bad: BadRows
    fingerprint: str                 # changes when the data changes (path + size + mtime, or hub hash)


def resolve_source(data: str) -> str:
    """The plan's ``data`` as a concrete path or ``hub:`` id ('sample' is the shipped dataset)."""
    from zerotui.core.plan.schema import SAMPLE_DATA

    if data == SAMPLE_DATA:
        from zerotui.core.paths import SAMPLE_FILE

        return str(SAMPLE_FILE)
    return data


def read_rows(data: str, text_field: str = "text", max_rows: Optional[int] = None) -> RawRows:
    """Read every row of ``data`` (a path, 'sample' or hub:ID[:CONFIG]); see module docstring."""
    source = resolve_source(data)
    if source.startswith("hub:"):
        return _read_hub(source[4:], max_rows)
    path = Path(source).expanduser()
    if not path.exists():
        raise DataError(f"data file {path} does not exist", FORMATS_HINT)
    if path.is_dir():
        raise DataError(f"data {path} is a folder, not a file", FORMATS_HINT)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise DataError(f"data file {path}: unknown type '{suffix or '(none)'}'", FORMATS_HINT)
    try:  # a FIFO, a device or a socket named like data: refused at once, never opened for a blocking read
        os.close(open_regular(path))
    except OSError as err:
        raise DataError(f"data file {path} {describe(err)}", FORMATS_HINT) from None
    stat = path.stat()
    fingerprint = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    if suffix == ".parquet":
        rows, where, bad = _read_parquet(path)
    else:
        text = _read_text(path)
        if not text.strip():
            raise DataError(f"data file {path} is empty", FORMATS_HINT)
        if suffix == ".json":
            rows, where, bad = _parse_json(text, path)
        elif suffix == ".jsonl":
            rows, where, bad = _parse_jsonl(text)
        elif suffix == ".csv":
            rows, where, bad = _parse_csv(text)
        else:
            rows, where, bad = _parse_txt(text, text_field)
    if not rows and bad.count:
        # Every line broken (a truncated export, the wrong file): say so, not "cannot tell the format".
        raise DataError(f"data file {path}: none of its {bad.count} rows could be read "
                        f"(first: {'; '.join(bad.examples[:3])})", FORMATS_HINT)
    if max_rows is not None:
        rows, where = rows[:max_rows], where[:max_rows]
    return RawRows(str(path), rows, where, bad, fingerprint)


def _read_text(path: Path) -> str:
    with open_file(path) as fh:  # regular files only (the check above; a swap since then is refused too)
        raw = fh.read()
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # the byte-order mark Windows tools write for "Unicode"
        raise DataError(f"data file {path} is UTF-16 text, not UTF-8",
                        f"convert it, e.g. `iconv -f utf-16 -t utf-8 {path.name} > fixed{path.suffix}`")
    if b"\x00" in raw[:8192]:
        raise DataError(f"data file {path} is binary (it holds NUL bytes), not {path.suffix or 'text'} text",
                        FORMATS_HINT)
    try:
        return raw.decode("utf-8-sig")  # a BOM (Excel, Notepad) is dropped
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataError(
            f"data file {path} is not UTF-8 text (byte 0x{raw[err.start]:02x} on line {line})",
            f"convert it to UTF-8, e.g. `iconv -f latin1 -t utf-8 {path.name} > fixed{path.suffix}`") from None


def _parse_json(text: str, path: Path) -> tuple[list, list, BadRows]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if err.msg == "Extra data":  # several objects one after another: JSON Lines named .json
            return _parse_jsonl(text)
        raise DataError(f"data file {path} is not valid JSON ({err.msg}: line {err.lineno}, column {err.colno})",
                        "a .json data file holds a list of objects; one object a line is .jsonl") from None
    except (ValueError, RecursionError) as err:  # a 5,001-digit number; brackets nested thousands deep
        raise DataError(f"data file {path} is not usable JSON ({_why(err)})",
                        "a .json data file holds a list of objects; one object a line is .jsonl") from None
    if isinstance(value, dict):
        # {"data": [...]} / {"train": [...]}: the first list of objects inside.
        lists = [v for v in value.values() if isinstance(v, list) and v and isinstance(v[0], (dict, str))]
        if not lists:
            raise DataError(f"data file {path} holds one object, not a list of rows",
                            "a .json data file holds a list of objects like [{\"instruction\": ...}, ...]")
        value = lists[0]
    if not isinstance(value, list):
        raise DataError(f"data file {path} holds a {type(value).__name__}, not a list of rows",
                        "a .json data file holds a list of objects like [{\"instruction\": ...}, ...]")
    return value, [f"row {i + 1}" for i in range(len(value))], BadRows()


def _parse_jsonl(text: str) -> tuple[list, list, BadRows]:
    rows, where, bad = [], [], BadRows()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
            where.append(f"line {n}")
        except json.JSONDecodeError as err:
            bad.add(f"line {n}", f"not valid JSON ({err.msg})")
        except (ValueError, RecursionError) as err:  # a 5,001-digit number; brackets nested thousands deep
            bad.add(f"line {n}", f"not usable JSON ({_why(err)})")
    return rows, where, bad


def _why(err: BaseException) -> str:
    return "nested too deeply" if isinstance(err, RecursionError) else str(err).split(";")[0][:80]


#: The csv module refuses a field over 128 KiB by default; a document in one cell is a normal row here
#: (the whole file is in memory already, so no field can be larger than it).
csv.field_size_limit(2**31 - 1)


def _parse_csv(text: str) -> tuple[list, list, BadRows]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows, where, bad = [], [], BadRows()
    try:
        header = reader.fieldnames or []
        first = reader.line_num + 1
        for row in reader:
            n, first = first, reader.line_num + 1
            if None in row:  # more fields than the header
                bad.add(f"line {n}", f"{len(header) + len(row[None])} fields, the header has {len(header)}")
                continue
            if any(v is None for v in row.values()):
                bad.add(f"line {n}", f"fewer fields than the header's {len(header)}")
                continue
            rows.append(row)
            where.append(f"line {n}")
    except csv.Error as err:  # e.g. a NUL inside a quoted field
        bad.add(f"line {reader.line_num}", f"not readable as CSV ({err}); the rest of the file was not read")
    if rows and text.count('"') % 2 and not text.rstrip().endswith('"') \
            and reader.line_num > int(where[-1].split()[1]):
        # A quote opened and never closed: the csv module reads everything after it as one field, so the
        # rows after it would train as one long value. That row is dropped and said to be.
        opened = where.pop()
        rows.pop()
        bad.add(opened, f"a quote opened here is never closed: lines {opened.split()[1]}-{reader.line_num} were "
                        "read as one row, skipped")
    return rows, where, bad


def _parse_txt(text: str, text_field: str) -> tuple[list, list, BadRows]:
    # Paragraphs (blank-line separated), not lines: code, verse and lists keep their line breaks.
    rows, where, line = [], [], 1
    for para in text.replace("\r\n", "\n").split("\n\n"):
        if para.strip():
            rows.append({text_field: para.strip("\n")})
            where.append(f"line {line}")
        line += para.count("\n") + 2
    return rows, where, BadRows()


def _read_parquet(path: Path) -> tuple[list, list, BadRows]:
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises its own hierarchy (ArrowInvalid, OSError, ...)
        raise DataError(f"data file {path} is not a readable parquet file ({str(err).splitlines()[0]})",
                        "write it with pandas.DataFrame.to_parquet or datasets' to_parquet") from None
    if table.num_rows == 0:
        raise DataError(f"data file {path} has no rows", FORMATS_HINT)
    rows = table.to_pylist()
    return rows, [f"row {i + 1}" for i in range(len(rows))], BadRows()


def _read_hub(spec: str, max_rows: Optional[int]) -> RawRows:
    """``hub:owner/name`` or ``hub:owner/name:config``; the 'train' split."""
    name, _, config = spec.partition(":")
    if not name:
        raise DataError("hub: needs a dataset id, e.g. hub:tatsu-lab/alpaca", FORMATS_HINT)
    from zerotui.core.hardware.hub import go_offline

    go_offline()  # no network: the cache answers at once, instead of a minute of retries
    offline = os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1"
    try:
        import datasets

        split = "train" if max_rows is None else f"train[:{max_rows}]"
        ds = datasets.load_dataset(name, config or None, split=split)
    except Exception as err:  # network, missing repo, bad config: all end the same way for the user
        first = (str(err).splitlines() or [type(err).__name__])[0][:200]
        why = "offline mode is on and it is not in the local cache" if offline else first
        raise DataError(f"hub dataset {name} could not be loaded: {why}",
                        "check the id on huggingface.co and the network; offline, download it first "
                        "or give a local .jsonl/.parquet file") from None
    rows = ds.to_list()
    fp = hashlib.sha256(f"{name}|{config}|{getattr(ds, '_fingerprint', '')}".encode()).hexdigest()
    return RawRows(f"hub:{spec}", rows, [f"row {i + 1}" for i in range(len(rows))], BadRows(), fp)
