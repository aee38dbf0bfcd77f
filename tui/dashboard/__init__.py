"""Watching runs: the live/finished run screen with its charts and panes, its controls, and the runs
list.

May import: ``zerotui.tui.common``, ``zerotui.tui.messages`` and ``zerotui.core``. Never the wizard.
"""
