"""zerotui's terminal UI (Textual). Imports textual; the core never imports this package."""
