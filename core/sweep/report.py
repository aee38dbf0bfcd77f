"""A sweep's state for people and scripts: its trials (values, state, eval losses, the run each one is),
the best so far, and what the trials cost beyond their own runs. Read from the study and status.json;
used by `zerotui sweep --show` and the sweep screen."""
from __future__ import annotations

from typing import Any, Optional

from zerotui.core.events.stream import read_end


def _run_elapsed(runs_dir: str, run: Optional[str]) -> Optional[float]:
    """The worker's life (run_finished.elapsed_s) of a trial's run."""
    from pathlib import Path

    if not run:
        return None
    for ev in reversed(read_end(Path(runs_dir) / run / "events.jsonl", 64 << 10, tail=True)):
        if ev.get("type") == "run_finished" and isinstance(ev.get("elapsed_s"), (int, float)):
            return float(ev["elapsed_s"])
    return None


def summary(paths: Any) -> dict[str, Any]:
    from zerotui.core.sweep.driver import open_study
    from zerotui.core.sweep.folder import driver_alive, read_spec, read_status

    spec, status = read_spec(paths), read_status(paths)
    study = open_study(paths)
    trials = []
    for t in study.get_trials(deepcopy=True):
        wall, life = t.user_attrs.get("wall_s"), _run_elapsed(spec["runs_dir"], t.user_attrs.get("run"))
        trials.append({"number": t.number, "state": t.state.name.lower(), "value": t.value,
                       "values": t.user_attrs.get("values") or t.params, "run": t.user_attrs.get("run"),
                       "error": t.user_attrs.get("error"), "wall_s": wall, "run_s": life,
                       "overhead_s": round(wall - life, 1) if wall is not None and life is not None else None,
                       "evals": [[int(k), float(v)] for k, v in sorted(t.intermediate_values.items())]})
    done = [t for t in trials if t["state"] == "complete"]
    best = min(done, key=lambda t: t["value"]) if done else None
    state = status.get("state") or "?"
    if state == "running" and not driver_alive(paths):
        state = "lost"  # the driver died: `--resume` starts it again
    over = [t["overhead_s"] for t in trials if t["overhead_s"] is not None]
    return {"sweep": paths.name, "state": state, "trials_wanted": spec["trials"], "trials": trials, "best": best,
            "preset": (status.get("best") or {}).get("preset"),
            "overhead_s_median": sorted(over)[len(over) // 2] if over else None}


