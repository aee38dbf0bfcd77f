"""`zerotui export` — not yet available (its issue has not landed)."""
from __future__ import annotations

import argparse

from zerotui.core.errors import ZeroTuiError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    raise ZeroTuiError("`zerotui export` is not yet available in this version", "see README.md for what works today")
