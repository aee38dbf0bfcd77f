"""Fill a DataTable with its column widths measured at once.

Textual's DataTable measures new rows only when it next goes idle, and it does not forget what it drew
in between: a refresh that lands between ``add_rows`` and that idle caches every row drawn at the width
of the column labels, and the table keeps showing the clipped cells ("instruction  input  output" with
three letters of each answer) until something else changes it. It happened on a loaded CI machine with
the dataset preview. Giving each column its width up front leaves nothing to measure later.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

from zerotui.core.safe_read import printable


def _plain(cell: Any) -> Any:
    """A str cell or label as plain Text. DataTable reads a str as Rich markup: a dataset's "[/INST]" or a
    run folder named "x[/b]" raised MarkupError while the table drew, and "[red]" restyled the cell.
    Control characters (a newline in a folder's name) are shown escaped."""
    return Text(printable(cell)) if isinstance(cell, str) else cell


def _width(cell: Any) -> int:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((cell_len(line) for line in text.splitlines()), default=0)


def fill_table(table: DataTable, columns: Sequence[Any], rows: Iterable[Sequence[Any]],
               keys: Sequence[str] | None = None) -> None:
    """Replace the table's columns and rows; each column is as wide as its widest cell or label."""
    rows = [[_plain(c) for c in r] for r in rows]
    columns = [_plain(label) for label in columns]
    widths = [max([_width(label)] + [_width(r[i]) for r in rows if i < len(r)]) for i, label in enumerate(columns)]
    table.clear(columns=True)
    for label, width in zip(columns, widths):
        table.add_column(label, width=width)
    for i, row in enumerate(rows):
        table.add_row(*row, key=keys[i] if keys is not None else None)
