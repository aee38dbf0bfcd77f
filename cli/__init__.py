"""The zerotui command line (headless; imports the TUI only to open it)."""
