"""zerotui's terminal UI (Textual): ``app`` (the App, its bindings and command palette), ``launch`` (the
entry points), ``wizard/`` (the setup flow), ``dashboard/`` (watching runs), ``common/`` (shared widgets
and modals) and ``messages`` (what threads post to the UI).

May import: ``zerotui.core``. The core never imports this package.
"""
