"""The dashboard's first line fits its terminal: the state and the run's name always, then read-only,
the zoom and the x axis as room allows, each whole or not at all."""
from __future__ import annotations

import pytest
from dashboard_helpers import DashApp, loaded, make_run, utc  # noqa: F401 (utc: fixture)
from wizard_helpers import pilot_test
from zerotui.tui.dashboard.run_header import HeaderFacts, status_line

LONG = "20260101-000000-llama7b-24gb-zero3-nvme-lora-r64-seq4096"


def facts(name: str = LONG, live: bool = False) -> HeaderFacts:
    return HeaderFacts(name=name, state="stopping", live=live, zoom="last 10 min", x_mode="step")


def test_everything_shows_when_there_is_room():
    line = status_line(facts(), 200).plain
    assert line == f"● stopping  {LONG}  read-only   zoom last 10 min   x steps"


@pytest.mark.parametrize("width", range(40, 110, 7))
def test_fields_leave_whole_from_the_least_important(width):
    line = status_line(facts(), width).plain
    assert len(line) <= width, (width, line)
    assert line.startswith("● stopping  20260101")  # the state and the name's date part, always
    assert "read-only" in line  # says why no control works: kept with the name
    order = ["zoom last 10 min", "x steps"]
    kept = [f for f in order if f in line]
    assert kept == order[:len(kept)], line  # a field shows only if every more important one does
    assert ("zoom" not in line or "zoom last 10 min" in line) and ("x st" not in line or "x steps" in line)
    if "…" in line:  # the name is shortened only once every optional field is gone
        assert kept == [] and line.endswith("read-only")
        assert line.split("  ")[1].endswith(LONG[-3:])  # both ends of the name stay


def test_a_short_name_keeps_every_field_at_80_columns():
    line = status_line(facts("20260101-000000-run", live=True), 80).plain
    assert line == "● stopping  20260101-000000-run   zoom last 10 min   x steps"


@pilot_test
async def test_at_80x24_a_long_run_name_leaves_the_status_line_whole(tmp_path):
    paths = make_run(tmp_path, "live.jsonl", name=LONG)
    app = DashApp(paths)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.pause(0.3)
        first = app.screen._compositor.render_strips()[0].text.strip()
        # 78 cells inside the padding: the whole name and the zoom fit, the x axis does not
        assert first == f"● running  {LONG}   zoom all", first
        await pilot.resize_terminal(60, 24)
        await pilot.pause(0.6)  # the next tick lays the line out for the new width
        first = app.screen._compositor.render_strips()[0].text.strip()
        assert first.startswith("● running  2026") and "…" in first and first.endswith(LONG[-6:]), first
