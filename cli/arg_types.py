"""Argument types the commands share."""
from __future__ import annotations

import argparse
from pathlib import Path


def folder(text: str) -> Path:
    """A folder option's value. An empty one (an unset shell variable) is refused: Path("") is ".", and
    `--runs-dir ""` wrote a run into the folder zerotui was started from."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty (an unset shell variable?); give a folder")
    return Path(text)
