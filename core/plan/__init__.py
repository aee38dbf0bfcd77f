"""The Plan: one typed description of a run (``schema``), read from YAML/dicts with clear errors, and
presets (named plans shipped or saved).

May import: the base modules only.
"""
