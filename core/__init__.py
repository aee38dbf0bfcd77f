"""zerotui's headless core: planning, estimating, configuring and running DeepSpeed fine-tunes.

Nothing in this package imports textual or rich (tests/test_import_hygiene.py enforces it), so the
CLI, the worker process and any other tool can use it without a terminal UI.
"""
