"""One module per subcommand, each with ``add_arguments(parser)`` and ``run(args) -> exit code``; imported
only when chosen (``zerotui doctor`` never pays for textual, nor the wizard for torch).

May import: ``zerotui.cli.plan_options``, ``hardware_options``, ``run_follow`` and ``zerotui.core``.
"""
