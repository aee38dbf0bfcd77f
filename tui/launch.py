"""Entry points the CLI calls: the wizard (``zerotui``, ``zerotui --preset NAME``) and the dashboard on
one run (``zerotui attach RUN``), and the sweep screen (``zerotui sweep --watch``). Imports stay inside the functions so ``zerotui doctor`` never pays for
Textual."""
from __future__ import annotations

from typing import Any, Optional


def run_wizard(preset: Optional[str] = None) -> int:
    from zerotui.tui.app import ZeroTuiApp

    app = ZeroTuiApp(preset=preset)
    app.run()
    return _finish(app)


def run_attach(paths: Any, read_only: bool = False) -> int:
    from zerotui.tui.app import ZeroTuiApp

    app = ZeroTuiApp(attach=paths)
    app.read_only = read_only
    app.run()
    return _finish(app)


def run_sweep_watch(paths: Any) -> int:
    """`zerotui sweep --watch`: the sweep screen alone."""
    from textual.app import App

    from zerotui.tui.dashboard.sweep_screen import SweepScreen

    class SweepApp(App):
        TITLE = "zerotui sweep"

        def on_mount(self) -> None:
            self.push_screen(SweepScreen(paths))

    SweepApp().run()
    return 0


def _finish(app: Any) -> int:
    """Print the App's parting note (a detached dashboard: the run goes on, how to come back) on the
    restored terminal, where it stays after the full-screen UI is gone."""
    note = app.return_value
    if isinstance(note, str) and note:
        print(note)
    return int(app.return_code or 0)
