"""Opening the dashboard and the runs list, for any App that hosts them.

The two screens open each other (Enter on a run, ``r`` on the dashboard), and both open the chat
on a finished run (``m``); they ask through the
``OpenRun`` / ``ShowRuns`` messages and the App, mixing this in, pushes the screen. So neither screen
imports the other. The screens are imported when first opened: the wizard's first frame does not wait
for the dashboard's charting libraries.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from textual.app import App

from zerotui.tui.messages import OpenChat, OpenRun, OpenSweep, ShowRuns


@runtime_checkable
class LeavesARun(Protocol):
    """A screen on a run that has something to say when the App ends (the dashboard: how to come back)."""

    def detach_note(self) -> str: ...


class RunNavigation(App):
    async def action_quit(self) -> None:
        """ctrl+q with a dashboard open says what d says: the run goes on, and how to come back to it."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, LeavesARun):
                self.exit(screen.detach_note())
                return
        self.exit()

    def on_open_run(self, message: OpenRun) -> None:
        from zerotui.tui.dashboard.screen import DashboardScreen

        self.push_screen(DashboardScreen(message.paths, live=message.live))

    def on_show_runs(self, message: ShowRuns) -> None:
        from zerotui.tui.dashboard.runs import RunsScreen

        self.push_screen(RunsScreen(runs_dir=message.runs_dir))

    def on_open_chat(self, message: OpenChat) -> None:
        from zerotui.tui.dashboard.chat_screen import ChatScreen

        self.push_screen(ChatScreen(message.paths))

    def on_open_sweep(self, message: OpenSweep) -> None:
        from zerotui.tui.dashboard.sweep_screen import SweepScreen

        self.push_screen(SweepScreen(message.paths, standalone=False))
