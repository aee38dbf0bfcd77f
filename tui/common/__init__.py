"""Widgets and modals shared by the wizard and the dashboard: help, confirm, error modal, the path
picker and measured DataTable filling.

May import: ``zerotui.tui.messages`` and ``zerotui.core``.
"""
