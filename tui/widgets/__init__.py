"""Reusable widgets: budget bar, charts, stat panel, run log, path picker."""
