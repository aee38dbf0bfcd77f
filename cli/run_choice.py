"""Which run a short name stood for, said on stderr by the commands that act on a live run.

``stop``, ``attach`` and ``serve`` take a fragment of a run's name; when it matches several runs and
just one of them is live, that one is meant (``folder.resolve_run(..., prefer_live=True)``). The run is
named before anything is done to it, on stderr, so --json's stdout stays one document.
"""
from __future__ import annotations

import sys
from typing import Callable


def say_choice(command: str) -> Callable[[str], None]:
    return lambda line: print(f"zerotui {command}: {line}", file=sys.stderr, flush=True)
