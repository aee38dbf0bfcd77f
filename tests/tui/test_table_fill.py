"""fill_table: a DataTable shows whole cells from the first frame it draws after being filled, not cells
clipped to the width of their column labels (Textual measures rows only on its next idle and keeps the
rows it drew before that; CI caught the dataset preview that way)."""
from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from dashboard_helpers import pilot_test
from zerotui.tui.common.table_fill import fill_table

COLUMNS = ("instruction", "input", "output")
ROWS = [("What does zerotui fit do?", "", "It lists the plans that fit this machine, fastest first."),
        ("Calculate 76 x 6.", "", Text("76 x 6 = 456.", style="bold"))]


class TableApp(App):
    def compose(self) -> ComposeResult:
        yield DataTable(show_cursor=False)


def drawn(table: DataTable) -> list[str]:
    return [table.render_line(y).text for y in range(len(ROWS) + 1)]


@pilot_test
async def test_rows_drawn_before_the_table_idles_are_whole():
    app = TableApp()
    async with app.run_test(size=(120, 10)) as pilot:
        table = app.query_one(DataTable)
        fill_table(table, COLUMNS, ROWS)
        before_idle = drawn(table)  # no await since the fill: the table has not been idle yet
        assert "It lists the plans that fit this machine, fastest first." in before_idle[1]
        assert "What does zerotui fit do?" in before_idle[1] and "76 x 6 = 456." in before_idle[2]
        await pilot.pause()
        assert drawn(table) == before_idle  # and the next frames agree with the first


@pilot_test
async def test_refilling_replaces_columns_rows_and_widths():
    app = TableApp()
    async with app.run_test(size=(120, 10)) as pilot:
        table = app.query_one(DataTable)
        fill_table(table, COLUMNS, ROWS)
        await pilot.pause()
        fill_table(table, ("run", "state"), [("r1", "lost")], keys=["r1"])
        assert [c.label.plain for c in table.ordered_columns] == ["run", "state"]
        assert table.row_count == 1 and [str(c) for c in table.get_row("r1")] == ["r1", "lost"]
        assert [c.get_render_width(table) for c in table.ordered_columns] == [3 + 2, 5 + 2]
        fill_table(table, (), [])
        assert table.row_count == 0 and not table.columns


@pilot_test
async def test_cells_and_labels_are_shown_as_written_not_read_as_markup():
    """A run folder named "x[/b]" or a dataset's "[/INST]" raised MarkupError while the table drew; a
    newline or an escape sequence in a folder's name is shown escaped, not sent to the terminal."""
    app = TableApp()
    async with app.run_test(size=(120, 10)) as pilot:
        table = app.query_one(DataTable)
        fill_table(table, ("[b]name[/b]", "state"), [("x[/b]", "[red]failed"), ("two\nlines\x1b[31m", "ok")])
        await pilot.pause()
        lines = [table.render_line(y).text for y in range(3)]
        assert "[b]name[/b]" in lines[0]
        assert "x[/b]" in lines[1] and "[red]failed" in lines[1]
        assert "two\\nlines\\x1b[31m" in lines[2]
