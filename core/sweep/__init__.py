"""Hyper-parameter search over a plan with Optuna: the search space (``space``), the sweep folder and its
SQLite study (``folder``), and the driver that runs one normal run per trial, prunes on eval loss and
saves the best plan as a preset (``driver``).

May import: ``run``, ``events``, ``plan`` and the base modules.
"""
