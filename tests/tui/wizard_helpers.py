"""Keyboard helpers for the wizard's Pilot tests: fill a field, pick a choice, wait for the workers."""
from __future__ import annotations

import asyncio
import functools
from typing import Any

from textual.widgets import Input, RadioSet

from zerotui.tui.wizard.field_help import Choice, control_id


#: Worker groups that run for a screen's whole life (never "finish").
FOLLOWERS = ("dashboard-events",)


async def settle(pilot) -> None:
    """Let thread workers (estimate, previews, fit) finish and their messages land. The dashboard's
    reader follows its events file for as long as the screen lives: it is not waited for (it used to
    hold every settle on a dashboard to the full 10 s)."""
    # Not workers.wait_for_complete(): it raises for a worker that an exclusive newer one cancelled.
    from textual.worker import WorkerState

    for _ in range(500):  # at most ~10 s
        await pilot.pause(0.02)
        if not any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) and w.group not in FOLLOWERS
                   for w in pilot.app.workers):
            break
    await pilot.pause(0.02)


async def fill(pilot, field: str, text: str) -> None:
    """Focus a text field and type ``text`` over what it held, key by key."""
    box = pilot.app.screen.query_one(f"#{control_id(field)}", Input)
    box.focus()
    await pilot.press("home", "ctrl+k")
    await pilot.press(*list(text)) if text else None
    await settle(pilot)


async def choose(pilot, field: str, value: Any) -> None:
    """Move the highlight of a RadioSet to ``value`` with the arrow keys and press Enter."""
    rs = pilot.app.screen.query_one(f"#{control_id(field)}", RadioSet)
    rs.focus()
    await pilot.pause()
    buttons = list(rs.query(Choice))
    target = next(i for i, b in enumerate(buttons) if b.choice == value)
    for _ in range(len(buttons) + 1):  # disabled choices are skipped by the arrows: steer, don't count
        if rs._selected == target:
            break
        await pilot.press("down" if (rs._selected or 0) < target else "up")
    assert rs._selected == target, f"cannot reach {field}={value!r} with the arrow keys (disabled?)"
    await pilot.press("enter")
    await settle(pilot)


async def jump(pilot, number: int) -> None:
    """Press a step's digit the way a user does: digits type into a focused text box, so leave it first."""
    pilot.app.screen.set_focus(None)
    await pilot.press(str(number))
    await settle(pilot)


async def new_run(pilot) -> None:
    """From the hardware screen, as the app opens: n, a new run on the default plan, at the model step."""
    await settle(pilot)
    await pilot.press("n")
    await settle(pilot)


async def new_run_at_data(pilot) -> None:
    """A new run (``new_run``), then ctrl+n on to the data step."""
    await new_run(pilot)
    await pilot.press("ctrl+n")
    await settle(pilot)


def step(pilot) -> str:
    return getattr(pilot.app.screen, "STEP", "") or type(pilot.app.screen).__name__


def pilot_test(fn):
    """Run an ``async def`` test with asyncio.run (no pytest-asyncio plugin needed)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))
    return wrapper


async def burst(pilot, keys: list[str], gap_s: float = 0.0) -> None:
    """Send keys the way a terminal does, through the driver, ``gap_s`` apart (0: all at once).

    ``pilot.press`` waits for the App to go idle after every key, so it never shows what a burst of keys
    over SSH does; this queues them as the input thread would and only then lets the App run.
    """
    from textual import events
    from textual.keys import _character_to_key

    driver = pilot.app._driver
    for key in keys:
        if len(key) == 1:
            event = events.Key(key if key.isalnum() else _character_to_key(key), key)
        else:
            event = events.Key(key, None)
        event.set_sender(pilot.app)
        driver.send_message(event)
        if gap_s:
            await asyncio.sleep(gap_s)
    await settle(pilot)
