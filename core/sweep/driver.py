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
from zerotui.core.sweep.folder import STUDY, SweepPaths, read_spec, write_status
from zerotui.core.sweep.spares import SweepSpare
from zerotui.core.sweep.slots import Slot, detected_gpus, pin, plan_slots
from zerotui.core.sweep.space import Param, suggest
from zerotui.core.sweep.trial_run import TrialRun

POLL_S = 1.0
#: Trials in a row that could not even start: the plan itself is wrong, not the values.
MAX_START_FAILURES = 3


def open_study(paths: SweepPaths, seed: int = 0) -> Any:
    import optuna

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
        self.active: list[TrialRun] = []
        self.failed: str | None = None   # why the sweep gave up asking (trials that could not start)
        self._last_error = ""

    # -- signals: a graceful stop of the sweep stops its current runs gracefully ---------------------
    def _on_term(self, signum: int, _frame: Any) -> None:
        self.stopping = True
        for tr in list(self.active):
            tr.stop()

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGINT, self._on_term)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        write_status(self.paths, state="running")
        try:
            return self._loop()
        finally:
            self.spare.close()

    def _loop(self) -> int:
        self._take_leftovers()
        failures = 0
        while True:
            while self._may_ask():
                failures = 0 if self._ask_and_start() else failures + 1
                if failures >= MAX_START_FAILURES:
                    self.failed = self._last_error
            if not self.active:
                break
            for tr in list(self.active):
                if tr.poll(self.log):
                    self._conclude(tr)
            self._spare_when_trained()
            self._write_running()
            if self.active:
                time.sleep(POLL_S)
        if self.failed is not None:
            write_status(self.paths, state="failed", reason=self.failed, trials_done=self._done())
            return 1
        if self.stopping:
            write_status(self.paths, state="stopped", trials_done=self._done())
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
        try:
            plan = pin(trial_plan(self.base, values, self.paths.name, trial.number), slot, self.parallel)
            run = self._start(plan)
        except ZeroTuiError as err:
            trial.set_user_attr("error", err.one_line())
            self.study.tell(trial, state=_state("FAIL"))
            self.log(f"trial {trial.number} ({values}) could not start: {err.one_line()}")
            self._last_error = err.one_line()
            return False
        trial.set_user_attr("run", run.name)
        trial.set_user_attr("values", values)
        trial.set_user_attr("slot", slot.label)
        self.log(f"trial {trial.number}: {values} -> run {run.name} ({slot.label})")
        self.active.append(TrialRun(trial.number, trial, run, slot, asked=asked))
        # Another trial will follow: a spare for it once this one trains (started now, its imports would
        # compete with this run's own start-up for the CPU).
        more = self._done() + len(self.active) < int(self.spec["trials"])
        self._spare_for = (self.active[-1], plan) if more else None
        return True

    def _spare_when_trained(self) -> None:
        if self._spare_for is not None and self._spare_for[0].stepped:
            self.spare.keep_ready(self._spare_for[1])
            self._spare_for = None

    def _start(self, plan: Plan) -> RunPaths:
        from zerotui.core.run.start import start_run

        return start_run(plan, runs_dir=self.runs_dir, force=bool(self.spec.get("force")))

    def _done(self) -> int:
        return sum(1 for t in self.study.get_trials(deepcopy=False) if t.state.is_finished())

    def _write_running(self) -> None:
        write_status(self.paths, state="stopping" if self.stopping else "running", trials_done=self._done(),
                     running=[{"trial": tr.number, "run": tr.run.name, "slot": tr.slot.label} for tr in self.active])

    def _conclude(self, tr: TrialRun) -> None:
        self.active.remove(tr)
        number, state, loss = tr.number, tr.outcome, tr.last
        if state in ("stopped", "lost") and self.stopping and not tr.pruned:
            return  # left RUNNING on purpose: `zerotui sweep --resume` resumes that run
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
            if state in ("stopped", "lost"):
                try:
                    resume_run(run, force=bool(self.spec.get("force")))
                    self.log(f"trial {t.number}: run {run.name} was {state}; resumed from its last checkpoint")
                except ZeroTuiError as err:
                    self.log(f"trial {t.number}: run {run.name} could not be resumed: {err.one_line()}")
                    self.study.tell(t.number, state=_state("FAIL"))
                    continue
            used = {tr.slot for tr in self.active}
            slot = next((s for s in self.slots if s.label == t.user_attrs.get("slot") and s not in used),
                        next((s for s in self.slots if s not in used), Slot(len(self.slots) + len(self.active))))
            # Optuna has no public call that reopens a RUNNING trial; Trial(study, id) is what ask() builds.
            self.active.append(TrialRun(t.number, Trial(self.study, t._trial_id), run, slot,
                                        reported=set(t.intermediate_values), timed=False))

    def _save_best(self) -> None:
        from zerotui.core.sweep.best import save_best

        save_best(self.paths, self.study, self.base, self.log)


def _state(name: str) -> Any:
    from optuna.trial import TrialState

    return getattr(TrialState, name)


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
