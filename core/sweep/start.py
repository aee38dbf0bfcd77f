"""Starting a sweep (the CLI's `zerotui sweep` and the wizard's Sweep action): check the plan and the space,
write the sweep folder, start the driver in its own session (so closing the terminal does not end it)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from zerotui.core.errors import PlanError, RunError, ZeroTuiError
from zerotui.core.plan.schema import Plan
from zerotui.core.sweep.folder import SweepPaths, new_sweep_dir, write_spec
from zerotui.core.sweep.slots import detected_gpus, plan_slots
from zerotui.core.sweep.space import Param, parse_space


def prepare_sweep(plan: Plan, space: str, trials: int, runs_dir: Path, seed: int = 0,
                  force: bool = False, parallel: int = 1,
                  gpu_count: int | None = None) -> tuple[SweepPaths, list[Param]]:
    """Check everything, then write the sweep folder; PlanError (nothing written) when something is wrong.

    ``parallel``: trials at once, one per GPU (core/sweep/slots.py); ``gpu_count`` the GPUs seen here
    (None: detect them)."""
    if not 1 <= trials <= 10_000:
        raise PlanError(f"--trials {trials}: give 1 to 10000", "e.g. --trials 10")
    # The GPUs are counted only when they matter: --parallel 1 runs the plan as it is.
    plan_slots(plan, parallel, (detected_gpus() if gpu_count is None else gpu_count) if parallel > 1 else 0)
    if plan.max_steps is None:
        raise PlanError("a sweep's trials are short runs: give --max-steps (e.g. --max-steps 200)",
                        "each trial trains that many optimizer steps", "max_steps")
    if plan.eval_fraction <= 0:
        raise PlanError("a sweep compares trials by eval loss: --eval-fraction must be above 0", "e.g. 0.05",
                        "eval_fraction")
    if not plan.eval_interval:  # evals along the way are what the pruner compares
        plan = plan.with_changes(eval_interval=max(1, plan.max_steps // 5))
    params = parse_space(space, plan)
    paths = new_sweep_dir(runs_dir, plan.name)
    write_spec(paths, {"plan": plan.to_dict(), "space": [p.to_dict() for p in params], "trials": trials,
                       "runs_dir": str(runs_dir), "seed": seed, "force": bool(force),
                       "parallel": parallel})
    return paths, params


def start_driver(paths: SweepPaths) -> int:
    """The driver, detached; its pid."""
    from zerotui.core.sweep.driver import open_study

    # The study's tables are made here, before anyone else opens study.db: Optuna creates them on first
    # open, and two processes doing that at once (the driver, and `--show` or the sweep screen reading
    # right after the start) collide on the version row.
    try:
        open_study(paths)
    except ZeroTuiError:
        raise
    except Exception as err:  # noqa: BLE001  (SQLAlchemy's errors: a full disk, a locked or damaged file)
        raise RunError(f"cannot create the sweep's study in {paths.db}: {err.__class__.__name__}: {err}",
                       "check that the runs folder is writable and has free space, then start the sweep again"
                       ) from err
    with open(paths.log, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "zerotui.core.sweep.driver", str(paths.root)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc.pid


def default_space(plan: Plan) -> str:
    """What the wizard offers: the learning rate a factor of 3 either way (log scale), and gradient
    accumulation halved, kept and doubled (the two the seed guide tunes)."""
    ga = sorted({max(1, plan.grad_accum // 2), plan.grad_accum, plan.grad_accum * 2})
    return f"lr={plan.lr / 3:.3g}..{min(plan.lr * 3, 0.5):.3g}:log,grad_accum={','.join(map(str, ga))}"


def runs_dir_for(plan: Plan, given: Path | None = None) -> Path:
    from zerotui.core.paths import default_runs_dir

    return Path(given or plan.runs_dir or default_runs_dir()).expanduser()
