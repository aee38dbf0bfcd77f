"""The zerotui command line: ``main`` (the ``zerotui`` entry point), one module per subcommand in
``commands/``, and the option parsers and run follower they share.

May import: ``zerotui.core``, and ``zerotui.tui`` only to open it (the wizard, ``attach``).
"""
