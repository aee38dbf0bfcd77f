"""``--json``: what a command prints on stdout is one JSON document — its result, or, when it could not do
what was asked, ``{"error": ..., "exit_code": N}`` — so ``zerotui ... --json | jq`` never reads an empty
or half-written stream. The one-line message for people still goes to stderr (cli/main.py)."""
from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any


def print_json(document: Any, indent: int | None = None) -> None:
    # default=str: paths and timestamps a result carries print as text rather than failing at the end
    sys.stdout.write(json.dumps(document, indent=indent, default=str) + "\n")
    sys.stdout.flush()


def error_document(line: str, exit_code: int, **detail: Any) -> dict[str, Any]:
    return {"error": line, **{k: v for k, v in detail.items() if v not in (None, "")}, "exit_code": exit_code}


def wants_json(argv: Sequence[str], args: Any = None) -> bool:
    """Did the user ask for --json? Before the arguments parse (an argparse error) only argv can say;
    anything after ``--`` is a value, not an option."""
    if args is not None:
        return bool(getattr(args, "json", False))
    head = list(argv)[: list(argv).index("--")] if "--" in argv else list(argv)
    return "--json" in head


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While libraries work (an op build, a model load), whatever they print goes to stderr, so stdout
    holds only the document. At the descriptor too: DeepSpeed's logger keeps the stdout it found at
    import, and a compiler it starts writes to fd 1."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)
