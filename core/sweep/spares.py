"""A spare worker kept ready for a sweep's next trial (core/run/spare.py).

Each trial is a new run, and a new run spends most of its start importing torch, DeepSpeed and
transformers. Once a trial has trained its first step (its own start-up, which needs the CPU, is then
behind it), the driver starts a spare for the environment its trials launch in; the next trial's launch
(``start_run``, as for any run) hands its run to that spare and starts training with the imports done.
A spare is started only when another trial will be asked after the ones running, and only for plans a
spare can serve (one process: not the DeepSpeed launcher's GPU-pinned slots of a ``--parallel`` sweep
on GPUs). The spare the sweep started and nobody took is ended with the sweep.

Only where trials train on a GPU, unless ``ZEROTUI_SPARE=1`` is set: a trial on the CPU trains on every
core, and the spare's imports take them from it. Measured on a 2-core machine (tiny model, 4 trials,
benchmarks/results/sweep-spares-cpu-2026-12-02.json): a trial's first step came 0.4-0.5 s after its
launch instead of 6.5-7.3 s, but the trial the spare imported beside trained 21.6 s instead of 12 s,
and the sweeps took longer (50.4-50.7 s against 46.0-48.1 s).
"""
from __future__ import annotations

import time
from typing import Optional

from zerotui.core.plan.schema import Plan
from zerotui.core.run import spare as sp
from zerotui.core.run import spare_claim
from zerotui.core.run.launcher import launcher_needed


#: How long the sweep's end waits for a spare that has not yet listed itself (it does within a second).
CLOSE_WAIT_S = 10.0


class SweepSpare:
    def __init__(self, gpu_count: int, log=print) -> None:
        self.gpu_count, self.log = gpu_count, log
        self.started: Optional[sp.Spare] = None

    def serves(self, plan: Plan) -> bool:
        """Whether a launch of ``plan`` here would take a spare (core/run/spare_claim.claimable), and the
        trials train where the spare's imports do not slow them."""
        if self.gpu_count == 0 and not sp.forced():
            return False
        return spare_claim.claimable(sp.worker_env(), launcher_needed(plan, self.gpu_count))

    def keep_ready(self, plan: Plan) -> None:
        """Have a spare up for the next trial of ``plan``'s shape (one per environment: a live one serves,
        and is left to whoever started it)."""
        if not self.serves(plan) or self._pending():
            return
        up = {s.supervisor for s in sp.list_spares()}  # one already up (the wizard's) serves, and is not ours
        spare = sp.start_spare()
        if spare is not None and spare.supervisor not in up:
            self.started = spare
            self.log(f"spare worker (supervisor pid {spare.supervisor}) importing for the next trial")

    def _pending(self) -> bool:
        """The spare started last is still up and untaken (a launch that takes one removes its folder).
        Asked here rather than by listing: a spare is listed only once its supervisor has started its
        worker, and trials started a moment apart (``--parallel``) must not start one each."""
        s = self.started
        return s is not None and s.folder.is_dir() and str(s.folder) in sp.cmdline(s.supervisor)

    def close(self) -> None:
        """End the spare this sweep started if no trial took it."""
        deadline = time.monotonic() + CLOSE_WAIT_S
        while self._pending() and time.monotonic() < deadline:  # a spare not yet listed cannot be stopped
            if sp.stop_spare(self.started):
                self.log(f"spare worker (supervisor pid {self.started.supervisor}) ended with the sweep")
                break
            time.sleep(0.1)
        self.started = None
