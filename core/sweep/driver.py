"""The sweep driver: ``python -m zerotui.core.sweep.driver SWEEP_DIR`` (detached, so a sweep survives the
SSH session that started it; ``zerotui sweep --resume`` starts it again after a crash or a reboot).

One trial at a time: Optuna (TPE sampler, median pruner) picks the values, the trial runs as an ordinary
zerotui run (``core/run/start.start_run``: the same checks, supervisor and events as `zerotui train`),
and the driver follows the run's ``eval`` events, reporting each eval loss to the trial; when the pruner
says the trial is behind the others at that step, the run is stopped at once (``stop-now``) and the trial
counted as pruned. A completed run's objective is its last eval loss (the loop always evaluates at the
end). The study lives in ``study.db`` (SQLite), so a restarted driver continues where it was: a trial
whose run is still going is followed again, one whose run was stopped or lost is resumed, one that
failed is counted as failed. When the trials are done, the best plan is saved as a preset.
"""
from __future__ import annotations

import math
from pathlib import Path
import signal
import sys
import time
from typing import Any, Callable, Optional

from zerotui.core.errors import ZeroTuiError
from zerotui.core.events.stream import read_new
from zerotui.core.plan.schema import Plan, plan_from_dict
from zerotui.core.run.folder import RunPaths, run_state, send_control
from zerotui.core.sweep.folder import STUDY, SweepPaths, read_spec, write_status
from zerotui.core.sweep.space import Param, suggest

POLL_S = 1.0
FINAL = ("completed", "stopped", "failed")
#: Trials in a row that could not even start: the plan itself is wrong, not the values.
MAX_START_FAILURES = 3


def open_study(paths: SweepPaths, seed: int = 0) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # n_startup_trials=2: the first two trials always run whole, so there is something to compare with.
    return optuna.create_study(study_name=STUDY, storage=paths.storage, load_if_exists=True, direction="minimize",
                               sampler=optuna.samplers.TPESampler(seed=seed),
                               pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0))


def trial_plan(base: Plan, values: dict[str, Any], sweep: str, number: int) -> Plan:
    # The run folder adds its own date and time: the plan's name and the trial number are enough.
    return base.with_changes(**values, name=f"{base.name[:70]}-t{number}",
                             description=f"trial {number} of sweep {sweep}: "
                                         + ", ".join(f"{k}={v}" for k, v in values.items()))


class Driver:
    def __init__(self, paths: SweepPaths, log: Callable[[str], None] = print) -> None:
        self.paths, self.log = paths, log
        self.spec = read_spec(paths)
        self.base = plan_from_dict(self.spec["plan"], str(paths.spec))
        self.params = [Param.from_dict(d) for d in self.spec["space"]]
        self.runs_dir = self.spec["runs_dir"]
        self.study = open_study(paths, int(self.spec.get("seed", 0)))
        self.stopping = False
        self.current: Optional[RunPaths] = None

    # -- signals: a graceful stop of the sweep stops its current run gracefully ----------------------
    def _on_term(self, signum: int, _frame: Any) -> None:
        self.stopping = True
        if self.current is not None:
            try:
                send_control(self.current, "stop", by="sweep")
            except ZeroTuiError:
                pass

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        write_status(self.paths, state="running")
        self._finish_leftovers()
        failures = 0
        while not self.stopping and self._done() < int(self.spec["trials"]):
            asked = time.monotonic()
            trial = self.study.ask()
            values = suggest(trial, self.params)
            try:
                plan = trial_plan(self.base, values, self.paths.name, trial.number)
                run = self._start(plan)
            except ZeroTuiError as err:
                failures += 1
                trial.set_user_attr("error", err.one_line())
                self.study.tell(trial, state=_state("FAIL"))
                self.log(f"trial {trial.number} ({values}) could not start: {err.one_line()}")
                if failures >= MAX_START_FAILURES:
                    write_status(self.paths, state="failed", reason=err.one_line())
                    return 1
                continue
            failures = 0
            trial.set_user_attr("run", run.name)
            trial.set_user_attr("values", values)
            self.log(f"trial {trial.number}: {values} -> run {run.name}")
            outcome = self._follow(run, trial)
            # Wall time from asking for the values to telling the result: the run's own life plus the
            # sweep's overhead (launch checks, following, Optuna), which `zerotui sweep --show` reports.
            trial.set_user_attr("wall_s", round(time.monotonic() - asked, 1))
            self._conclude(trial.number, *outcome)
            write_status(self.paths, state="running", trials_done=self._done())
        if self.stopping:
            write_status(self.paths, state="stopped", trials_done=self._done())
            return 0
        self._save_best()
        return 0

    def _start(self, plan: Plan) -> RunPaths:
        from zerotui.core.run.start import start_run

        return start_run(plan, runs_dir=self.runs_dir, force=bool(self.spec.get("force")))

    def _done(self) -> int:
        return sum(1 for t in self.study.get_trials(deepcopy=False) if t.state.is_finished())

    # -- following a trial's run ------------------------------------------------------------------------
    def _follow(self, run: RunPaths, trial: Any = None) -> tuple[str, Optional[float], bool]:
        """Until the run ends: (its state, its last finite eval loss, whether it was pruned)."""
        self.current = run
        offset, last, pruned = 0, None, False
        try:
            while True:
                evs, offset = read_new(run.events, offset)
                for ev in evs:
                    if ev.get("type") == "eval" and _finite(ev.get("loss")):
                        last = float(ev["loss"])
                        if trial is not None and not pruned:
                            trial.report(last, int(ev.get("step") or 0))
                            if trial.should_prune():
                                pruned = True
                                self.log(f"trial {trial.number}: pruned at step {ev.get('step')} (eval loss {last:.4g})")
                                send_control(run, "stop-now", by="sweep")
                    elif ev.get("type") == "run_finished":
                        return str(ev.get("state")), last, pruned
                if run_state(run) == "lost":
                    return "lost", last, pruned
                write_status(self.paths, state="running", trial=trial.number if trial else None, run=run.name)
                time.sleep(POLL_S)
        finally:
            self.current = None

    def _conclude(self, number: int, state: str, loss: Optional[float], pruned: bool) -> None:
        if pruned:
            self.study.tell(number, state=_state("PRUNED"))
        elif state == "completed" and loss is not None:
            self.study.tell(number, loss)
            self.log(f"trial {number}: eval loss {loss:.4g}")
        elif state in ("stopped", "lost") and self.stopping:
            return  # left RUNNING on purpose: `zerotui sweep --resume` resumes that run
        else:
            self.study.tell(number, state=_state("FAIL"))
            self.log(f"trial {number}: {state} without an eval loss")

    def _finish_leftovers(self) -> None:
        """Trials a previous driver left running: follow, resume or close them."""
        from zerotui.core.run.start import resume_run

        for t in self.study.get_trials(deepcopy=False, states=(_state("RUNNING"),)):
            name = t.user_attrs.get("run")
            run = RunPaths(Path(self.runs_dir) / name) if name else None
            if run is None or not run.root.is_dir():
                self.study.tell(t.number, state=_state("FAIL"))
                continue
            state = run_state(run)
            if state in ("stopped", "lost"):
                try:
                    resume_run(run, force=bool(self.spec.get("force")))
                    self.log(f"trial {t.number}: run {run.name} was {state}; resumed")
                except ZeroTuiError as err:
                    self.log(f"trial {t.number}: run {run.name} could not be resumed: {err.one_line()}")
                    self.study.tell(t.number, state=_state("FAIL"))
                    continue
            self._conclude(t.number, *self._follow(run))

    def _save_best(self) -> None:
        from zerotui.core.plan.presets import save_preset

        done = [t for t in self.study.get_trials(deepcopy=False) if t.state == _state("COMPLETE")]
        if not done:
            write_status(self.paths, state="completed", best=None, reason="no trial completed")
            return
        best = min(done, key=lambda t: t.value)
        values = best.user_attrs.get("values") or best.params
        plan = self.base.with_changes(**values, name=f"{self.paths.name[-70:]}-best",
                                      description=f"best of sweep {self.paths.name}: eval loss {best.value:.4g}")
        preset = ""
        try:
            preset = str(save_preset(plan, plan.name, overwrite=True))
        except (ZeroTuiError, OSError) as err:
            self.log(f"the best plan could not be saved as a preset: {err}")
        write_status(self.paths, state="completed", best={"trial": best.number, "value": best.value,
                                                          "values": values, "run": best.user_attrs.get("run"),
                                                          "preset": preset})
        self.log(f"best: trial {best.number}, eval loss {best.value:.4g}, {values}; preset {preset or '-'}")


def _state(name: str) -> Any:
    from optuna.trial import TrialState

    return getattr(TrialState, name)


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m zerotui.core.sweep.driver SWEEP_DIR\n")
        return 2
    from pathlib import Path

    paths = SweepPaths(Path(argv[0]))
    try:
        return Driver(paths, log=lambda m: print(f"zerotui sweep: {m}", flush=True)).run()
    except ZeroTuiError as err:
        print(f"zerotui sweep: {err.one_line()}", flush=True)
        write_status(paths, state="failed", reason=err.one_line())
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
