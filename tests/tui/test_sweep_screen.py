"""The sweep screen (tui/dashboard/sweep_screen.py) on a study of six finished trials."""
from __future__ import annotations

import asyncio

from sweep_fixture import TRIALS, add_running, make_sweep, sweep_host, until_read
from textual.widgets import DataTable, Static


def read_screen(paths) -> tuple[list[list[str]], str]:
    """The sweep screen on ``paths``, once it has read the study: its table's rows and its headline."""
    async def go():
        app = sweep_host(paths)
        async with app.run_test(size=(140, 40)) as pilot:
            await until_read(app, pilot)
            table = app.screen.query_one(DataTable)
            rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
            return rows, str(app.screen.query_one("#sweep-head", Static).render())

    return asyncio.run(go())


def test_the_sweep_screen_lists_every_trial_and_the_best(tmp_path):
    paths = make_sweep(tmp_path / "sweeps" / "20261201-120000-demo", tmp_path / "runs")
    rows, head = read_screen(paths)
    assert [r[0] for r in rows] == [f"t{i}" for i in range(len(TRIALS))]
    assert [r[1] for r in rows] == [t[2].lower() for t in TRIALS]
    assert rows[4][2] == "5.36" and "grad_accum=2" in rows[4][3]
    assert "6 of 8 trials done" in head and "best: t4, eval loss 5.36" in head


def test_several_running_trials_each_show_their_gpu_and_latest_eval(tmp_path):
    """--parallel: two trials running at once are two rows, each with its GPU; the headline counts them."""
    paths = make_sweep(tmp_path / "sweeps" / "20261201-120000-demo", tmp_path / "runs")
    add_running(paths)
    rows, head = read_screen(paths)
    running = rows[len(TRIALS):]
    assert [r[1] for r in running] == ["running", "running"]
    assert running[0][2] == "5.77 @4" and running[0][4].endswith("(gpu 0)")
    assert running[1][2] == "-" and running[1][4].endswith("(gpu 1)")
    assert "6 of 8 trials done, 2 running" in head


def test_the_review_step_starts_a_sweep_and_shows_it(tmp_path, monkeypatch):
    """The wizard's Sweep action (w on the review): the dialog's defaults come from the plan, Start writes
    the sweep folder and starts the driver, and the sweep screen opens on it (Escape goes back)."""
    from wizard_helpers import settle
    from zerotui.core.sweep import start as sweep_start
    from zerotui.core.sweep.folder import read_spec
    from zerotui.tui.app import ZeroTuiApp
    from zerotui.tui.dashboard.sweep_screen import SweepScreen as Screen
    from zerotui.tui.wizard.demo_hardware import cpu_only
    from zerotui.tui.wizard.sweep_dialog import SweepDialog

    monkeypatch.setenv("ZEROTUI_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    started = []
    monkeypatch.setattr(sweep_start, "start_driver", lambda paths: started.append(paths) or 4242)

    async def go():
        app = ZeroTuiApp(hardware=cpu_only(), preset="tiny-cpu-demo", runs_dir=None)  # opens on the review
        async with app.run_test(size=(140, 44)) as pilot:
            await settle(pilot)
            await pilot.press("w")
            await pilot.pause(0.3)
            assert isinstance(app.screen, SweepDialog)
            space = app.screen.query_one("#sweep-space").value
            app.screen.query_one("#sweep-trials").value = "3"
            app.screen.start()
            for _ in range(50):
                await pilot.pause(0.1)
                if isinstance(app.screen, Screen):
                    break
            shown = type(app.screen)
            await pilot.press("escape")
            await pilot.pause(0.2)
            return space, shown, type(app.screen).__name__

    space, shown, back = asyncio.run(go())
    assert space.startswith("lr=") and ":log,grad_accum=" in space
    assert shown is Screen and back == "ReviewScreen"
    assert len(started) == 1
    spec = read_spec(started[0])
    assert spec["trials"] == 3 and [p["name"] for p in spec["space"]] == ["lr", "grad_accum"]
