"""The footer's text holds every key its screen shows, whole, at 80×24, 120×40 and 200×50.

What is expected comes from Textual's own map of the screen's active bindings (what a key press is
dispatched through, with each ``check_action`` applied), grouped by action as Textual's Footer groups
them; what is found is the footer's row as the compositor draws it. A key the footer had to leave out,
or one cut at the terminal's edge, fails here: the fix is fewer shown keys (the help lists them all) or
shorter descriptions."""
from __future__ import annotations

import os
import time

import pytest
from dashboard_helpers import last_t, make_run, utc, wait_for  # noqa: F401 (utc: fixture)
from wizard_helpers import jump, pilot_test, settle
from zerotui.core.atomic import atomic_write_json
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.common.footer import FitFooter
from zerotui.tui.wizard.demo_hardware import workstation_24gb

SIZES = [(80, 24), (120, 40), (200, 50)]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))


def shown_entries(app) -> list[str]:
    """'key description' of each footer entry the screen asks for: the first shown, enabled binding of
    each action (Textual's Footer shows one entry per action)."""
    entries: dict[str, str] = {}
    for active in app.screen.active_bindings.values():
        b = active.binding
        if b.show and active.enabled and b.action not in entries:
            entries[b.action] = f"{app.get_key_display(b)} {b.description}"
    return list(entries.values())


def footer_text(app) -> str:
    footer = app.screen.query_one(FitFooter)
    rows = app.screen._compositor.render_strips()  # what the terminal gets, row by row
    return rows[footer.region.y].text


async def check_footer(pilot, where: str) -> None:
    app = pilot.app
    for _ in range(40):  # the footer recomposes a frame or two after the bindings change (≤ 2 s)
        await pilot.pause(0.05)
        expected, text = shown_entries(app), footer_text(app)
        if all(e in text for e in expected):
            break
    assert len(expected) >= 3, f"{where}: {expected}"
    missing = [e for e in expected if e not in text]
    assert not missing, f"{where} at {app.size.width}×{app.size.height}: {missing} not in the footer |{text}|"
    assert app.get_key_display(app.screen.active_bindings["f1"].binding) in text or "? Help" in text


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pilot_test
async def test_every_wizard_step_shows_all_its_keys(size):
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await check_footer(pilot, "hardware")
        await pilot.press("n")
        await settle(pilot)
        for number in range(1, 6):
            await jump(pilot, number)
            await check_footer(pilot, f"step {number} (its text box focused)")
            app.screen.set_focus(None)  # outside text boxes, the letter keys join the footer
            await check_footer(pilot, f"step {number}")


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pilot_test
async def test_the_review_of_a_preset_shows_all_its_keys(size):
    app = ZeroTuiApp(hardware=workstation_24gb(), preset="llama7b-24gb-zero3-cpu")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert app.screen.STEP == "review"
        await check_footer(pilot, "review")


def _run(tmp_path, kind: str):
    now = time.time()
    if kind == "live":
        paths = make_run(tmp_path, "live.jsonl")
        status = {"state": "running", "pid": os.getpid(), "pids": [os.getpid()], "heartbeat": now, "step": 1}
    elif kind == "resumed":  # `zerotui resume` wrote "starting" after the old worker's run_finished
        paths = make_run(tmp_path, "recorded-tiny-stopped.jsonl", status={})
        status = {"state": "starting", "launched": last_t(paths) + 5, "heartbeat": now, "resumed": True,
                  "pid": os.getpid(), "pids": [os.getpid()]}
    else:
        paths = make_run(tmp_path, "finished.jsonl", status={})
        status = {"state": "completed", "heartbeat": last_t(paths)}
    atomic_write_json(paths.status, status, fsync=False)
    return paths


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kind", ["live", "resumed", "finished"])
@pilot_test
async def test_the_dashboard_and_the_runs_list_show_all_their_keys(tmp_path, kind, size):
    app = ZeroTuiApp(attach=_run(tmp_path, kind))
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "history", None) is not None, what="the history")
        expect = {"live": "running", "resumed": "starting", "finished": "completed"}[kind]
        await wait_for(pilot, lambda: app.screen.outcome == expect, what=f"the {expect} state")
        await check_footer(pilot, f"dashboard ({kind})")
        if kind == "live":
            await pilot.press("r")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "RunsScreen", what="the runs list")
            await settle(pilot)
            await check_footer(pilot, "runs list")


@pilot_test
async def test_the_keys_follow_a_status_that_settles_the_outcome_without_a_new_state(tmp_path):
    """A resumed run is "starting" in every status.json read; what sets the old run_finished aside is the
    status's launch time. When the history lands before that status (as on a slow machine), the footer
    showed the stopped run's keys (u Resume run) for good: keys were refreshed on a new state only."""
    from zerotui.tui.messages import RunStateChanged

    paths = _run(tmp_path, "resumed")
    app = ZeroTuiApp(attach=paths)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.screen.outcome == "starting", what="the starting state")
        status = dict(app.screen.status)
        app.screen.post_message(RunStateChanged("starting", {}))  # the order of the race, made certain
        await wait_for(pilot, lambda: app.screen.outcome == "stopped", what="the old end standing")
        await check_footer(pilot, "dashboard (status without its launch)")
        assert "u Resume run" in footer_text(app)
        app.screen.post_message(RunStateChanged("starting", status))
        await wait_for(pilot, lambda: app.screen.outcome == "starting", what="the resumed run")
        await check_footer(pilot, "dashboard (resumed, status read after the history)")
        assert "s Stop" in footer_text(app) and "u Resume run" not in footer_text(app)
