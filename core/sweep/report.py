"""A sweep's state for people and scripts: its trials (values, state, eval losses, the run each one is),
the best so far, and what the trials cost beyond their own runs. Read from the study and status.json;
used by `zerotui sweep --show` and the sweep screen. Several trials may be running at once (--parallel):
each running one carries its slot (``gpu 1``, ``slot 0``) and its latest eval loss."""
from __future__ import annotations

from typing import Any

from zerotui.core.events.stream import read_end


def _run_elapsed(runs_dir: str, run: str | None) -> float | None:
    """The worker's life (run_finished.elapsed_s) of a trial's run."""
    from pathlib import Path

    if not run:
        return None
    for ev in reversed(read_end(Path(runs_dir) / run / "events.jsonl", 64 << 10, tail=True)):
        if ev.get("type") == "run_finished" and isinstance(ev.get("elapsed_s"), (int, float)):
            return float(ev["elapsed_s"])
    return None


def _study_trials(paths: Any) -> list[Any]:
    """The study's trials; RunError naming study.db when it is not a database Optuna can read (a damaged
    or foreign file), instead of SQLAlchemy's traceback."""
    from zerotui.core.errors import RunError, ZeroTuiError
    from zerotui.core.sweep.driver import open_study
    from zerotui.core.sweep.folder import study_exists

    if not study_exists(paths):
        return []
    try:
        return list(open_study(paths).get_trials(deepcopy=True))
    except ZeroTuiError:
        raise
    except Exception as err:  # noqa: BLE001  (SQLAlchemy's and Optuna's errors: damaged, locked, foreign)
        first = (str(err).splitlines() or [""])[0][:200]
        raise RunError(f"sweep {paths.name}: cannot read its study {paths.db}: {err.__class__.__name__}: {first}",
                       "if another program holds it, try again; if it is damaged, move the sweep folder aside "
                       "(its trials' runs stay in the runs folder)") from None


def _trial_state(t: Any) -> str:
    """Optuna's state, but ``stopped`` for a trial a stopped sweep left RUNNING for `--resume` to resume
    (the driver marks it: Optuna cannot reopen a finished trial, so RUNNING is what stays)."""
    state = t.state.name.lower()
    return "stopped" if state == "running" and t.user_attrs.get("interrupted") else state


def _run_now(runs_dir: str, run: str | None) -> str:
    """What a trial's run is by its own folder, as `zerotui runs` says it (live, lost, stopped, completed,
    failed, damaged); ``lost`` when the trial has no run folder (the driver died before or while making
    it). Read only: the run's status.json, events.jsonl and processes."""
    from pathlib import Path

    from zerotui.core.run.folder import RunPaths, summarise

    root = Path(runs_dir) / run if run else None
    if root is None or not root.is_dir():
        return "lost"
    return summarise(RunPaths(root)).state


def _orphan(trial: dict[str, Any], runs_dir: str) -> None:
    """A trial Optuna still holds RUNNING while no driver follows it (killed with -9, a reboot): its state
    becomes its run's own, and ``orphaned`` marks it as one `zerotui sweep --resume` takes up again (it
    follows a live run, resumes a stopped or lost one, and counts a finished one). A live run stays
    ``running``: it trains on in its own session."""
    state = _run_now(runs_dir, trial["run"])
    trial["state"] = "running" if state in ("starting", "running", "paused", "stopping") else state
    trial["orphaned"] = True


def summary(paths: Any) -> dict[str, Any]:
    from zerotui.core.sweep.folder import driver_alive, read_spec, read_status

    spec, status = read_spec(paths), read_status(paths)
    trials = []
    alive: bool | None = None  # asked once, and only when some trial says it is running
    # A reader never creates the study (the start does): without study.db there are no trials to show.
    for t in _study_trials(paths):
        wall, life = t.user_attrs.get("wall_s"), _run_elapsed(spec["runs_dir"], t.user_attrs.get("run"))
        trials.append({"number": t.number, "state": _trial_state(t), "value": t.value,
                       "values": t.user_attrs.get("values") or t.params, "run": t.user_attrs.get("run"),
                       "error": t.user_attrs.get("error"), "wall_s": wall, "run_s": life,
                       "overhead_s": round(wall - life, 1) if wall is not None and life is not None else None,
                       "evals": [[int(k), float(v)] for k, v in sorted(t.intermediate_values.items())],
                       "slot": t.user_attrs.get("slot"), "warnings": t.user_attrs.get("warnings") or []})
        if trials[-1]["state"] == "running":
            alive = driver_alive(paths) if alive is None else alive
            if not alive:  # nobody updates the study for it: say what its run really is
                _orphan(trials[-1], spec["runs_dir"])
    done = [t for t in trials if t["state"] == "complete"]
    best = min(done, key=lambda t: t["value"]) if done else None
    state = status.get("state") or "?"
    if state in ("running", "stopping") and not (driver_alive(paths) if alive is None else alive):
        state = "lost"  # the driver died: `--resume` starts it again
    over = [t["overhead_s"] for t in trials if t["overhead_s"] is not None]
    return {"sweep": paths.name, "state": state, "trials_wanted": spec["trials"], "parallel": spec.get("parallel", 1),
            "running": sum(t["state"] == "running" for t in trials),
            "stopped": sum(t["state"] == "stopped" for t in trials),
            "orphaned": sum(bool(t.get("orphaned")) for t in trials), "trials": trials, "best": best,
            "preset": (status.get("best") or {}).get("preset"),
            "overhead_s_median": sorted(over)[len(over) // 2] if over else None}


def trial_cells(t: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(trial, state, eval loss, values, where) of one trial of ``summary``, for a table: a running trial
    shows its latest eval loss with its step (``5.91 @4``) and the slot it runs on."""
    if t.get("value") is not None:
        value = f"{t['value']:.4g}"
    elif (t["state"] in ("running", "stopped") or t.get("orphaned")) and t.get("evals"):
        value = f"{t['evals'][-1][1]:.4g} @{t['evals'][-1][0]}"
    else:
        value = "-"
    values = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in (t.get("values") or {}).items())
    where = t.get("run") or t.get("error") or ""
    if t["state"] == "running" and t.get("slot"):
        where = f"{where} ({t['slot']})"
    return (f"t{t['number']}", t["state"], value, values, where)


def progress(s: dict[str, Any]) -> str:
    """``3 of 8 trials done, 2 running`` (the running part only while some are; likewise ``1 stopped``, a
    trial a stop interrupted, and ``1 awaiting --resume``, one whose driver died with its run ended: the
    study has not counted it, `--resume` does)."""
    done = sum(t["state"] not in ("running", "stopped") and not t.get("orphaned") for t in s["trials"])
    waiting = sum(bool(t.get("orphaned")) and t["state"] not in ("running", "stopped") for t in s["trials"])
    line = f"{done} of {s['trials_wanted']} trials done"
    line += f", {s['running']} running" if s.get("running") else ""
    line += f", {s['stopped']} stopped" if s.get("stopped") else ""
    return line + (f", {waiting} awaiting --resume" if waiting else "")
