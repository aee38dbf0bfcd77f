"""The help screen lists the keys of the screen it was opened from (and the App's), every one of them.

The expected keys come from Textual's own binding maps of the live screen and App (what a key press is
dispatched through), not from the help's code, so a key added to a screen and missing from its help fails
here."""
from __future__ import annotations

import os

import pytest
from rich.console import Console

from dashboard_helpers import make_run, utc, wait_for  # noqa: F401 (utc: fixture)
from wizard_helpers import jump, pilot_test, settle
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.common.help import HelpScreen
from zerotui.tui.wizard.demo_hardware import workstation_24gb


def _help_lines(app) -> list[str]:
    content = app.screen.query_one("#help-text").content
    with open(os.devnull, "w") as sink:
        console = Console(width=400, record=True, file=sink)
        console.print(content)
    return console.export_text().splitlines()


def _bindings(node) -> list:
    return [b for bindings in node._bindings.key_to_bindings.values() for b in bindings if not b.system]


async def _check_help_of_current_screen(pilot) -> list[str]:
    """Open the help from the current screen and check every binding of that screen and of the App."""
    app = pilot.app
    screen = app.screen
    await pilot.press("f1")  # F1 works in a text box too, where "?" would be typed
    await settle(pilot)
    assert isinstance(app.screen, HelpScreen) and app.screen.source is screen
    lines = _help_lines(app)
    expected = _bindings(screen) + _bindings(app)
    assert len(expected) > 5
    for b in expected:
        key = app.get_key_display(b)
        assert any(key in line.split("  ", 2)[1].split() and b.description in line for line in lines
                   if line.startswith("  ") and len(line.split("  ", 2)) > 2), \
            f"{type(screen).__name__}: {key} ({b.description}) is not in its help:\n" + "\n".join(lines)
    await pilot.press("escape")
    await settle(pilot)
    assert app.screen is screen
    return lines


@pilot_test
async def test_every_wizard_screen_lists_its_own_keys():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        lines = await _check_help_of_current_screen(pilot)  # the hardware screen: n p a
        assert any(line.split()[:1] == ["n"] and "New run" in line for line in lines)
        await pilot.press("n")
        await settle(pilot)
        for number in range(1, 6):
            await jump(pilot, number)
            lines = await _check_help_of_current_screen(pilot)
            assert any("Preset" in line and line.split()[:1] == ["p"] for line in lines)
        text = "\n".join(lines)
        assert "Launch" in text and "Export" in text  # the review's own keys, on the review only


@pilot_test
async def test_dashboard_help_lists_the_dashboard_keys_not_the_wizards(tmp_path):
    paths = make_run(tmp_path, "live.jsonl")
    app = ZeroTuiApp(attach=paths)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: type(app.screen).__name__ == "DashboardScreen", what="the dashboard")
        await settle(pilot)
        lines = await _check_help_of_current_screen(pilot)
        text = "\n".join(lines)
        assert "Detach" in text and "Pause/resume" in text and "1 2 3 4 5 6 7" in text
        assert "Fit" not in text and "Breakdown" not in text  # the wizard's keys are not the dashboard's
        await pilot.press("r")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "RunsScreen", what="the runs list")
        await _check_help_of_current_screen(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@pilot_test
async def test_footer_never_cuts_a_key_and_keeps_help(size):
    # The review has the most keys of the wizard: at 80 columns Textual's footer cut Export and Help.
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        footer = app.screen.query_one("FitFooter")
        await pilot.pause(0.1)
        keys = [k for k in footer.query("FooterKey")]
        right = max(k.region.right for k in keys)
        assert right <= size[0]
        shown = {k.action for k in keys}
        assert {"app.help", "launch", "export"} <= shown or {"help", "launch", "export"} <= shown
        for k in keys:  # each entry is drawn whole: its region holds its key and its description
            assert k.region.width >= len(k.key_display) + len(k.description)
