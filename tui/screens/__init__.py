"""Wizard and dashboard screens, one per file."""
