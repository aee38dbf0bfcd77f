"""A sweep folder with a study of finished trials, written without running any (for the sweep screen)."""
from __future__ import annotations

from pathlib import Path

from zerotui.core.plan.schema import Plan
from zerotui.core.sweep.folder import SweepPaths, write_spec, write_status
from zerotui.core.sweep.space import Param

#: (lr, grad_accum, state, eval losses by step)
TRIALS = [(3.2e-4, 2, "COMPLETE", {4: 6.1, 8: 5.71}), (1.1e-4, 1, "COMPLETE", {4: 6.4, 8: 6.02}),
          (9.0e-4, 4, "COMPLETE", {4: 5.9, 8: 5.42}), (1.5e-4, 1, "PRUNED", {4: 6.7}),
          (6.0e-4, 2, "COMPLETE", {4: 5.8, 8: 5.36}), (2.2e-4, 4, "PRUNED", {4: 6.5})]


def make_sweep(root: Path, runs_dir: Path) -> SweepPaths:
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution
    from optuna.trial import TrialState, create_trial
    from zerotui.core.sweep.driver import open_study

    root.mkdir(parents=True)
    paths = SweepPaths(root)
    space = [Param("lr", 1e-4, 1e-3, log=True), Param("grad_accum", choices=(1, 2, 4))]
    write_spec(paths, {"plan": Plan(name="demo", max_steps=8).to_dict(), "space": [p.to_dict() for p in space],
                       "trials": 8, "runs_dir": str(runs_dir), "seed": 0})
    study = open_study(paths)
    dists = {"lr": FloatDistribution(1e-4, 1e-3, log=True), "grad_accum": CategoricalDistribution([1, 2, 4])}
    for n, (lr, ga, state, evals) in enumerate(TRIALS):
        st = getattr(TrialState, state)
        study.add_trial(create_trial(state=st, value=evals[max(evals)], params={"lr": lr, "grad_accum": ga},
                                     distributions=dists, intermediate_values=evals,
                                     user_attrs={"run": f"20261201-1200{n:02d}-demo-t{n}",
                                                 "values": {"lr": lr, "grad_accum": ga}, "wall_s": 41.0 + n}))
    write_status(paths, state="running", trials_done=len(TRIALS))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return paths


def add_running(paths: SweepPaths, slots: tuple[str, ...] = ("gpu 0", "gpu 1")) -> None:
    """Trials asked and not told yet, as a --parallel driver leaves them while their runs go: the first
    has reported an eval loss at step 4."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution
    from zerotui.core.sweep.driver import open_study

    study = open_study(paths)
    dists = {"lr": FloatDistribution(1e-4, 1e-3, log=True), "grad_accum": CategoricalDistribution([1, 2, 4])}
    for i, slot in enumerate(slots):
        t = study.ask(dists)
        t.set_user_attr("run", f"20261201-1300{i:02d}-demo-t{t.number}")
        t.set_user_attr("slot", slot)
        if i == 0:
            t.report(5.77, 4)


def sweep_host(paths: SweepPaths):
    """A bare App showing the sweep screen on ``paths`` (tests and the screenshot script)."""
    from textual.app import App
    from zerotui.tui.dashboard.sweep_screen import SweepScreen

    class SweepHost(App):
        TITLE = "zerotui sweep"

        def on_mount(self):
            self.push_screen(SweepScreen(paths))

    return SweepHost()


async def until_read(app, pilot, settle_s: float = 0.2) -> None:
    """Wait (up to 5 s) for the screen's first read of the study, then let it draw."""
    for _ in range(50):
        await pilot.pause(0.1)
        if app.screen.summary is not None:
            break
    await pilot.pause(settle_s)


def empty_sweep(tmp_path: Path, trials: int, max_steps: int) -> SweepPaths:
    """A sweep folder of ``trials`` on lr and an empty study, as ``zerotui sweep`` writes it before its
    driver starts (the driver tests run the driver itself on it)."""
    from zerotui.core.sweep.driver import open_study

    paths = SweepPaths(tmp_path / "runs" / "sweeps" / "s")
    paths.root.mkdir(parents=True)
    write_spec(paths, {"plan": Plan(name="s", max_steps=max_steps).to_dict(), "trials": trials, "parallel": 1,
                       "runs_dir": str(tmp_path / "runs"), "seed": 0,
                       "space": [Param("lr", 1e-5, 1e-3, log=True).to_dict()]})
    open_study(paths)
    return paths
