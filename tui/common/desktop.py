"""A terminal bell and a desktop notification from an attached dashboard (alerts, the run's end).

Terminals show desktop notifications for one of two escape sequences: OSC 777 ``notify`` (rxvt-unicode,
foot, WezTerm, Ghostty, VTE terminals) and OSC 9 (iTerm2, Windows Terminal, ConEmu); a terminal that knows
neither ignores both. Written through Textual's driver, as Textual writes its own bell and OSC sequences.
Over SSH they reach the user's local terminal; inside tmux only with ``allow-passthrough``.
"""
from __future__ import annotations

from typing import Any


def _clean(text: str, limit: int) -> str:
    # ';' separates OSC 777's fields and control characters would end the sequence early.
    return "".join(" " if (c in ";\x1b\x07" or ord(c) < 32) else c for c in text)[:limit]


def desktop_notify(app: Any, title: str, body: str) -> bool:
    """Bell, then both sequences; False (nothing written) in a headless app (tests, textual-serve)."""
    driver = getattr(app, "_driver", None)
    if getattr(app, "is_headless", True) or driver is None:
        return False
    app.bell()
    t, b = _clean(title, 80), _clean(body, 240)
    driver.write(f"\x1b]777;notify;{t};{b}\x1b\\")
    driver.write(f"\x1b]9;{t}: {b}\x07")
    return True
