"""The setup flow: one screen per step (hardware, model, data and method, precision, ZeRO and offload,
review), Fit, presets and export dialogs, the wizard's state, and the live budget bar.

May import: ``zerotui.tui.common``, ``zerotui.tui.messages`` and ``zerotui.core``. Never the dashboard:
opening a run goes through the App (``messages.OpenRun``).
"""
