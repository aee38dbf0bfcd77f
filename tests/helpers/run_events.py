"""Reading a run folder from a test: its events, and waiting for something to appear in it."""
from __future__ import annotations

import time
from typing import Any, Callable, Optional

from zerotui.core.events.stream import read_all
from zerotui.core.run.folder import RunPaths


def events(paths: RunPaths, type_: Optional[str] = None) -> list[dict]:
    """Every event of the run (of one type when given), in file order."""
    return [e for e in read_all(paths.events) if type_ is None or e["type"] == type_]


def wait_until(cond: Callable[[], Any], timeout: float = 60.0, what: str = "condition",
               paths: Optional[RunPaths] = None, poll_s: float = 0.05) -> Any:
    """``cond()``'s first truthy value; on timeout an AssertionError naming ``what``, with the end of the
    run's worker.log when ``paths`` is given (what the worker said is usually why)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(poll_s)
    log = paths.log.read_text(errors="replace")[-4000:] if paths is not None and paths.log.exists() else ""
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}" + (f"\n{log}" if log else ""))
