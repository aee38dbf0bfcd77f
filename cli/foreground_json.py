"""`zerotui train --foreground --json` and `zerotui resume --foreground --json`: the live lines go to
stderr, as they happen, and stdout gets one JSON object when the run has ended — what a script asks
of a run it waited for: how it ended, at which step, with which loss."""
from __future__ import annotations

import sys
from typing import Any

from zerotui.core.run.folder import RunPaths


def follow_as_json(paths: RunPaths, offset: int, resumed: bool) -> int:
    from zerotui.cli.json_result import print_json
    from zerotui.cli.run_follow import finished_problem, follow_run
    from zerotui.core.events.stream import as_float
    from zerotui.core.run.folder import run_state

    sys.stderr.write(f"run {paths.name} in {paths.root} (Ctrl-C stops it gracefully)\n")
    sys.stderr.flush()
    seen: dict[str, Any] = {}
    code = follow_run(paths, offset, out=sys.stderr, seen=seen)
    end, last = seen.get("end") or {}, seen.get("step") or {}
    if end.get("type") == "lost":
        state = "lost"
    else:  # no end: Ctrl-C three times detached us, and the run is still stopping
        state = end.get("state") or run_state(paths)
    doc: dict[str, Any] = {
        "run": paths.name, "path": str(paths.root), "resumed": resumed, "state": state,
        # run_finished's step is the supervisor's last word; a lost run has only its last step event
        "step": end["step"] if end.get("step") is not None else last.get("step"),
        "total_steps": seen.get("total_steps"), "loss": as_float(last.get("loss")),
        "reason": end.get("reason"), "exit_code": code,
    }
    if code:
        doc["error"] = (finished_problem(paths, end) if end else
                        f"detached from {paths.name} before it ended; `zerotui runs` shows how it ends")
    print_json(doc)
    return code
