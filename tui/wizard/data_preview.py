"""The first rows of a dataset and its detected row format.

The wizard shows this while the user picks a file, so a single local file is read with the standard
library only (pandas, pyarrow and ``datasets`` take seconds to import). A ``save_to_disk`` folder, a hub
dataset in the local cache (with its split and config) and a mix of entries are read by training's own
code (``core.data.peek``: the worker's readers, the first rows only), in the wizard's worker thread. The
same rules as training decide the format (``core.data.prompts``): the columns a row has (alpaca, chat,
prompt/response, plain text).
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from zerotui.core.data.files import FORMATS_HINT, SUFFIXES  # what training reads: stdlib imports only
from zerotui.core.errors import DataError

#: Enough rows to see the shape of the data; more would only slow the first frame of the step.
PREVIEW_ROWS = 5
#: Only this much of a file is read: a 20 GB JSONL must preview as fast as a small one.
READ_LIMIT = 1 << 20


@dataclass
class Preview:
    source: str
    path: Optional[Path]
    format: str                       # text | alpaca | chat | prompt_response | unknown
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    note: str = ""                    # e.g. "hub dataset: previewed when the run starts"


def _format_of(records: list[Any], columns: list[str], plan: Any, source: str) -> tuple[str, str]:
    """(format, note): the same rule training applies (core.data.prompts.detect_format), so the preview
    never promises a format the run will then reject."""
    from zerotui.core.errors import DataError
    from zerotui.core.plan.schema import Plan
    from zerotui.core.data.prompts import detect_format as training_format

    try:
        return training_format(records, plan or Plan(), source), ""
    except DataError as err:
        return "unknown", err.one_line()


def _cell(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _sample_path() -> Optional[Path]:
    """The dataset shipped with zerotui ('sample'), where the training part keeps it."""
    from zerotui.core.data.files import resolve_source

    path = Path(resolve_source("sample"))
    return path if path.exists() else None


def _rows_from_records(records: list[Any]) -> tuple[list[str], list[list[str]]]:
    columns: list[str] = []
    for r in records:
        if isinstance(r, dict):
            columns += [k for k in r if k not in columns]
    if not columns:
        return ["text"], [[_cell(r)] for r in records]
    return columns, [[_cell(r.get(c, "")) if isinstance(r, dict) else "" for c in columns] for r in records]


#: Rows handed to the format detection (core.data.prompts looks at up to 20).
DETECT_ROWS = 20


def preview(source: Any, plan: Any = None, rows: int = PREVIEW_ROWS) -> Preview:
    """Read the first ``rows`` rows of ``source`` (a path, 'sample', a save_to_disk folder, hub:<id>, or a
    plan's list of entries) and detect the format the way training will (with ``plan``'s field names and
    data_format)."""
    if not isinstance(source, str) or source.startswith("hub:") or Path(source).expanduser().is_dir():
        return _entries_preview(source, plan, rows)
    path = _sample_path() if source == "sample" else Path(source).expanduser()
    if path is None:
        raise DataError("the sample dataset is not installed", "reinstall zerotui, or pick a file")
    if not path.exists():
        raise DataError(f"{path}: no such file", f"pick a {', '.join(SUFFIXES[:-1])} or {SUFFIXES[-1]} file")
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:  # previewing it would promise a file training then refuses
        raise DataError(f"{path}: unknown type '{suffix or '(none)'}'", FORMATS_HINT)
    if suffix == ".parquet":  # binary: read by training's parquet reader, the first rows only
        return _entries_preview(source, plan, rows)
    try:
        with open(path, "rb") as fh:
            head = fh.read(READ_LIMIT)
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror})", "check the permissions") from None
    text = head.decode("utf-8", errors="replace")
    truncated = len(head) == READ_LIMIT
    if suffix == ".jsonl" or (suffix == ".json" and text.lstrip().startswith("{")):
        records = []
        lines = text.splitlines()
        if truncated and lines:
            lines = lines[:-1]  # the last line may be cut in the middle
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                raise DataError(f"{path}: line {n} is not valid JSON", "each line must be one JSON object") from None
            if len(records) >= DETECT_ROWS:
                break
    elif suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            if truncated:
                return Preview(source, path, "unknown", note="large JSON array: previewed when the run starts")
            raise DataError(f"{path}: not valid JSON", "a .json dataset is a list of objects") from None
        if not isinstance(data, list):
            raise DataError(f"{path}: the JSON is not a list of rows", "a .json dataset is a list of objects")
        records = data[:DETECT_ROWS]
    elif suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        records = [dict(r) for _, r in zip(range(DETECT_ROWS), reader)]
    else:  # plain text: one sample a line
        lines = [ln for ln in text.splitlines() if ln.strip()][:rows]
        if not lines:
            raise DataError(f"{path}: no rows found", "the file is empty or has only blank lines")
        return Preview(source, path, "text", ["text"], [[_cell(ln)] for ln in lines])
    if not records:
        raise DataError(f"{path}: no rows found", "the file is empty or has only blank lines")
    columns, table = _rows_from_records(records[:rows])
    fmt, note = _format_of(records, columns, plan, str(path))
    return Preview(source, path, fmt, columns, table, note=note)


def _entries_preview(source: Any, plan: Any, rows: int) -> Preview:
    """Each entry's first rows through ``core.data.peek``; a mix shows which entry each row is from."""
    from zerotui.core.data.peek import NotCached, peek
    from zerotui.core.plan.data_source import sources
    from zerotui.core.plan.schema import Plan

    plan = plan or Plan()
    entries = sources(source)
    label = source if isinstance(source, str) else " + ".join(e.label() for e in entries)
    path = Path(source).expanduser() if isinstance(source, str) and not source.startswith("hub:") else None
    mixed = len(entries) > 1
    records, table_rows, formats, notes = [], [], [], []
    for entry in entries:
        try:
            got, problems = peek(entry, plan.text_field, DETECT_ROWS)
        except NotCached as err:
            notes.append(err.one_line())
            continue
        if not got:
            raise DataError(f"{entry.label()}: no readable rows found" + (f" (first: {problems[0]})" if problems else ""),
                            FORMATS_HINT)
        fmt, note = _format_of(got, [], plan, entry.label())
        formats.append(fmt)
        notes += [f"{entry.label()}: {note}" if mixed else note] if note else []
        records += got
        share = max(1, rows // len(entries)) if mixed else rows
        table_rows += [({"source": entry.label(), **r} if mixed and isinstance(r, dict) else r) for r in got[:share]]
    if not formats:
        return Preview(label, path, "unknown", note="; ".join(notes))
    # Each entry of a mix is read in its own format by training, so different ones are no problem.
    fmt = formats[0] if len(set(formats)) == 1 else f"mixed ({', '.join(sorted(set(formats)))})"
    columns, table = _rows_from_records(table_rows[:rows])
    return Preview(label, path, fmt, columns, table, note="; ".join(n for n in notes if n))
