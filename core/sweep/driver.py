"""The sweep driver: ``python -m zerotui.core.sweep.driver SWEEP_DIR`` (detached, so a sweep survives the
SSH session that started it; ``zerotui sweep --resume`` starts it again after a crash or a reboot).

Up to ``parallel`` trials at a time (sweep.json; one per GPU, core/sweep/slots.py): Optuna (TPE sampler
with the constant liar, so trials asked while others run get other values; median pruner) picks the
values, each trial runs as an ordinary zerotui run (``core/run/start.start_run``: the same checks,
supervisor and events as `zerotui train`), and the driver polls every trial's ``eval`` events in turn
from its one thread (Optuna's ask/tell on the SQLite study is never called from two threads), reporting
each eval loss to its trial; when the pruner says a trial is behind the others at that step, its run is
stopped at once (``stop-now``), the trial counted as pruned and its slot given to the next trial. A
completed run's objective is its last eval loss (the loop always evaluates at the end).

The study lives in ``study.db`` (SQLite), so a restarted driver continues where it was: a trial whose run
is still going (the runs live in their own sessions, so killing the driver does not stop them) is
followed again, one whose run was stopped or lost is resumed from its newest checkpoint as the same trial
(not asked again), one that failed is counted as failed. When the trials are done, the best plan is
saved as a preset.

A stop (SIGTERM: `zerotui sweep --stop`, or Ctrl-C of `--foreground`, which the CLI passes on as one) tells
each running trial's run to stop with a checkpoint, a second one to stop at once; the trials it ends stay
RUNNING in the study for `--resume`, marked ``interrupted`` so that readers show them as stopped.
"""
from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zerotui.core.errors import ZeroTuiError
from zerotui.core.plan.schema import Plan, plan_from_dict
from zerotui.core.run.folder import RunPaths, run_state
from zerotui.core.run.folder import read_status as read_run_status
from zerotui.core.sweep.folder import STUDY, SweepPaths, read_spec, study_exists, write_status
from zerotui.core.sweep.spares import SweepSpare
from zerotui.core.sweep.slots import Slot, detected_gpus, pin, plan_slots
from zerotui.core.sweep.space import Param, suggest
from zerotui.core.sweep.trial_run import TrialRun

POLL_S = 1.0
#: Trials in a row that could not even start: the plan itself is wrong, not the values.
MAX_START_FAILURES = 3


def open_study(paths: SweepPaths, seed: int = 0) -> Any:
    import optuna

    study_exists(paths)  # a folder or a FIFO in study.db's place: one line naming it, not SQLite's error

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # n_startup_trials=2: the first two trials always run whole, so there is something to compare with.
    return optuna.create_study(study_name=STUDY, storage=paths.storage, load_if_exists=True, direction="minimize",
                               sampler=_sampler(seed),
                               pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=0))


def _sampler(seed: int) -> Any:
    import optuna

    # constant_liar: a trial asked while others run (--parallel) is steered away from their values.
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def trial_plan(base: Plan, values: dict[str, Any], sweep: str, number: int) -> Plan:
    # The run folder adds its own date and time: the plan's name and the trial number are enough.
    return base.with_changes(**values, name=f"{base.name[:70]}-t{number}",
                             description=f"trial {number} of sweep {sweep}: "
                                         + ", ".join(f"{k}={v}" for k, v in values.items()))


class Driver:
    def __init__(self, paths: SweepPaths, log: Callable[[str], None] = print,
                 gpu_count: int | None = None) -> None:
        self.paths, self.log = paths, log
        self.spec = read_spec(paths)
        self.base = plan_from_dict(self.spec["plan"], str(paths.spec))
        self.params = [Param.from_dict(d) for d in self.spec["space"]]
        self.runs_dir = self.spec["runs_dir"]
        self.parallel = int(self.spec.get("parallel", 1))
        # Checked again here, not only by `zerotui sweep`: a sweep may be resumed on another machine.
        gpus = detected_gpus() if gpu_count is None else gpu_count
        self.slots = plan_slots(self.base, self.parallel, gpus)
        self.spare = SweepSpare(gpus, log)  # the next trial's imports, done while this one trains
        self._spare_for: tuple[TrialRun, Plan] | None = None
        seed = int(self.spec.get("seed", 0))
        self.study = open_study(paths, seed)
        asked = len(self.study.get_trials(deepcopy=False))
        if asked:
            # A restarted driver's sampler would replay the first one's random draws (the first trials are
            # random samples): the trials it asks would repeat values already tried. Seeded by the count,
            # a fresh sweep stays reproducible and a resumed one draws anew.
            self.study.sampler = _sampler(seed + asked)
        self.stopping = False
        self.signals: list[str] = []     # the signals that asked the sweep to stop, in order
        self._said = 0                   # of those, the ones the log has told of
        self.interrupted: list[dict[str, Any]] = []  # trials the stop left RUNNING, for --resume
        self.active: list[TrialRun] = []
        self.failed: str | None = None   # why the sweep gave up asking (trials that could not start)
        self._last_error = ""
        self._warnings: list[str] = []   # what the launch being made warned of (start_run's warn)

    # -- signals: a graceful stop of the sweep stops its current runs gracefully, a second one at once ---
    def _on_term(self, signum: int, _frame: Any) -> None:
        # Flags and control-file appends only: the main thread may be inside Optuna's SQLite or a print.
        self.signals.append(signal.Signals(signum).name)
        self.stopping = True
        self._pass_on_stop()

    def _pass_on_stop(self) -> None:
        """Each running trial's run told to stop: with a checkpoint first, or at once after a second signal.
        Called again from the loop, for a trial whose launch was under way when the signal came."""
        command = "stop-now" if len(self.signals) > 1 else "stop"
        for tr in list(self.active):
            if not tr.pruned:
                tr.stop(command)

    def run(self, early: list[int] | None = None) -> int:
        """``early``: signals that came before the driver could act on them (``main`` records them)."""
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        for signum in early or ():
            self._on_term(signum, None)
        write_status(self.paths, state="stopping" if self.stopping else "running")
        try:
            return self._loop()
        finally:
            self.spare.close()

    def _loop(self) -> int:
        if not self.stopping:  # stopped before it began: leftovers stay as they are, for the next --resume
            self._take_leftovers()
        failures = 0
        while True:
            if self.stopping:
                self._pass_on_stop()
                self._say_stopping()
            while self._may_ask():
                failures = 0 if self._ask_and_start() else failures + 1
                if failures >= MAX_START_FAILURES:
                    self.failed = self._last_error
            if not self.active:
                break
            for tr in list(self.active):
                if tr.poll(self.log):
                    self._say_stopping()  # a stop that came meanwhile: told before the end it caused
                    self._conclude(tr)
            self._spare_when_trained()
            self._write_running()
            if self.active:
                time.sleep(POLL_S)
        if self.failed is not None:
            write_status(self.paths, state="failed", reason=self.failed, trials_done=self._done())
            return 1
        if self.stopping:
            write_status(self.paths, state="stopped", reason=self.signals[0] if self.signals else "stopped",
                         trials_done=self._done(), interrupted=self.interrupted)
            self.log(stopped_line(self.paths.name, self._done(), int(self.spec["trials"]), self.interrupted))
            return 0
        self._save_best()
        return 0

    def _may_ask(self) -> bool:
        return (not self.stopping and self.failed is None and len(self.active) < len(self.slots)
                and self._done() + len(self.active) < int(self.spec["trials"]))

    def _free_slot(self) -> Slot:
        used = {tr.slot for tr in self.active}
        return next(s for s in self.slots if s not in used)

    def _ask_and_start(self) -> bool:
        """Ask for a trial and start its run on a free slot; False when it could not start (told FAIL)."""
        asked = time.monotonic()
        trial = self.study.ask()
        values = suggest(trial, self.params)
        slot = self._free_slot()
        self._warnings = []
        try:
            plan = pin(trial_plan(self.base, values, self.paths.name, trial.number), slot, self.parallel)
            run = self._start(plan)
        except ZeroTuiError as err:
            self._tell_warnings(trial, self._warnings)
            trial.set_user_attr("error", err.one_line())
            self.study.tell(trial, state=_state("FAIL"))
            self.log(f"trial {trial.number} ({values}) could not start: {err.one_line()}")
            self._last_error = err.one_line()
            return False
        trial.set_user_attr("run", run.name)
        trial.set_user_attr("values", values)
        trial.set_user_attr("slot", slot.label)
        self.log(f"trial {trial.number}: {values} -> run {run.name} ({slot.label})")
        self._tell_warnings(trial, self._warnings)
        self.active.append(TrialRun(trial.number, trial, run, slot, asked=asked))
        # Another trial will follow: a spare for it once this one trains (started now, its imports would
        # compete with this run's own start-up for the CPU).
        more = self._done() + len(self.active) < int(self.spec["trials"])
        self._spare_for = (self.active[-1], plan) if more else None
        return True

    def _tell_warnings(self, trial: Any, warnings: list[str]) -> None:
        """A launch's warnings (checkpoint room, ds_overrides keys DeepSpeed ignores, ...) where the sweep's
        user looks: the driver's output (the terminal of --foreground, else driver.log) and the study,
        which `--show` reads; otherwise only the trial's worker.log would hold them."""
        for w in warnings:
            self.log(f"trial {trial.number}: warning: {w}")
        if warnings:
            trial.set_user_attr("warnings", list(warnings))

    def _say_stopping(self) -> None:
        if len(self.signals) <= self._said:
            return
        self._said = len(self.signals)
        going = [tr for tr in self.active if not tr.pruned]
        trials, one = ", ".join(f"trial {tr.number} (run {tr.run.name})" for tr in going), len(going) == 1
        if not going:
            self.log(f"stopping ({self.signals[-1]}): no trial is running; no new one will start")
        elif self._said == 1:
            self.log(f"stopping ({self.signals[-1]}): {trials} {'saves' if one else 'save'} a checkpoint, then "
                     f"{'stops' if one else 'stop'}; stop again (Ctrl-C, or `zerotui sweep --stop "
                     f"{self.paths.name}`) to end {'it' if one else 'them'} at once, without one")
        elif self._said == 2:
            self.log(f"stopping at once ({self.signals[-1]} again): {trials} {'stops' if one else 'stop'} at the "
                     "next step, without a checkpoint")

    def _spare_when_trained(self) -> None:
        if self._spare_for is not None and self._spare_for[0].stepped:
            self.spare.keep_ready(self._spare_for[1])
            self._spare_for = None

    def _start(self, plan: Plan) -> RunPaths:
        from zerotui.core.run.start import start_run

        return start_run(plan, runs_dir=self.runs_dir, force=bool(self.spec.get("force")),
                         warn=self._warnings.append)

    def _done(self) -> int:
        return sum(1 for t in self.study.get_trials(deepcopy=False) if t.state.is_finished())

    def _write_running(self) -> None:
        write_status(self.paths, state="stopping" if self.stopping else "running", trials_done=self._done(),
                     running=[{"trial": tr.number, "run": tr.run.name, "slot": tr.slot.label} for tr in self.active])

    def _conclude(self, tr: TrialRun) -> None:
        self.active.remove(tr)
        number, state, loss = tr.number, tr.outcome, tr.last
        if state in ("stopped", "lost") and self.stopping and not tr.pruned:
            # Left RUNNING on purpose (Optuna cannot reopen a finished trial): `zerotui sweep --resume`
            # resumes that run. The mark tells readers it is not running now.
            step = read_run_status(tr.run).get("step")
            mark = {"trial": number, "run": tr.run.name, "state": state,
                    "step": step if isinstance(step, int) and not isinstance(step, bool) else None}
            tr.trial.set_user_attr("interrupted", {"state": state, "step": mark["step"]})
            self.interrupted.append(mark)
            self.log(f"trial {number}: run {tr.run.name} {state}"
                     + (f" at step {mark['step']}" if mark["step"] is not None else ""))
            return
        if tr.timed:
            # Wall time from asking for the values to telling the result: the run's own life plus the
            # sweep's overhead (launch checks, following, Optuna), which `zerotui sweep --show` reports.
            tr.trial.set_user_attr("wall_s", tr.wall_s)
        if tr.pruned:
            self.study.tell(number, state=_state("PRUNED"))
        elif state == "completed" and loss is not None:
            self.study.tell(number, loss)
            self.log(f"trial {number}: eval loss {loss:.4g}")
        else:
            self.study.tell(number, state=_state("FAIL"))
            self.log(f"trial {number}: {state} without an eval loss")

    def _take_leftovers(self) -> None:
        """Trials a previous driver left running: follow, resume or close them, each on its old slot."""
        from optuna.trial import Trial
        from zerotui.core.run.start import resume_run

        for t in self.study.get_trials(deepcopy=False, states=(_state("RUNNING"),)):
            name = t.user_attrs.get("run")
            run = RunPaths(Path(self.runs_dir) / name) if name else None
            if run is None or not run.root.is_dir():
                self.study.tell(t.number, state=_state("FAIL"))
                continue
            state = run_state(run)
            trial = Trial(self.study, t._trial_id)  # no public call reopens a RUNNING trial; ask() builds this
            if t.user_attrs.get("interrupted"):
                trial.set_user_attr("interrupted", None)  # running again, or failed below
            if state in ("stopped", "lost"):
                try:
                    resume_run(run, force=bool(self.spec.get("force")),
                               warn=lambda w, n=t.number: self.log(f"trial {n}: warning: {w}"))
                    self.log(f"trial {t.number}: run {run.name} was {state}; resumed from its last checkpoint")
                except ZeroTuiError as err:
                    self.log(f"trial {t.number}: run {run.name} could not be resumed: {err.one_line()}")
                    self.study.tell(t.number, state=_state("FAIL"))
                    continue
            used = {tr.slot for tr in self.active}
            slot = next((s for s in self.slots if s.label == t.user_attrs.get("slot") and s not in used),
                        next((s for s in self.slots if s not in used), Slot(len(self.slots) + len(self.active))))
            self.active.append(TrialRun(t.number, trial, run, slot,
                                        reported=set(t.intermediate_values), timed=False))

    def _save_best(self) -> None:
        from zerotui.core.sweep.best import save_best

        save_best(self.paths, self.study, self.base, self.log)


def stopped_line(name: str, done: int, wanted: int, interrupted: list[dict[str, Any]]) -> str:
    """The one line a stopped sweep ends with: what was stopped, and the command that goes on."""
    line = f"sweep {name} stopped with {done} of {wanted} trials done"
    rest = done + len(interrupted) < wanted
    if not interrupted:
        return line + (f"; continue with `zerotui sweep --resume {name}`" if rest else "")
    line += "; " + ", ".join(f"trial {m['trial']} (run {m['run']}) {m['state']}"
                             + (f" at step {m['step']}" if m.get("step") is not None else "") for m in interrupted)
    return (line + f"; continue with `zerotui sweep --resume {name}`: it resumes "
            + ("that trial" if len(interrupted) == 1 else "those trials") + " from the newest checkpoint"
            + (" and runs the rest" if rest else ""))


def _state(name: str) -> Any:
    from optuna.trial import TrialState

    return getattr(TrialState, name)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m zerotui.core.sweep.driver SWEEP_DIR\n")
        return 2
    from pathlib import Path

    # Recorded from the start: a stop asked while the driver still opens the study is acted on, not lost
    # (and not a KeyboardInterrupt traceback).
    early: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: early.append(signum))
    paths = SweepPaths(Path(argv[0]))
    try:
        return Driver(paths, log=lambda m: print(f"zerotui sweep: {m}", flush=True)).run(early)
    except ZeroTuiError as err:
        print(f"zerotui sweep: {err.one_line()}", flush=True)
        write_status(paths, state="failed", reason=err.one_line())
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
