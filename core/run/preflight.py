"""Refusing, before anything is written, what would fail minutes later on the GPU box.

``preflight`` checks the GPU choice against this machine, that the NVMe folder can be written, and that
the memory estimate fits (unless forced); it returns the Budget, which the launch records with the run.
The plan's local inputs (data file, model folder) are checked by ``input_check``.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Optional

from zerotui.core.errors import HardwareError
from zerotui.core.estimate.budget import Budget, estimate
from zerotui.core.hardware.disks import not_a_folder_here
from zerotui.core.hardware.types import Hardware
from zerotui.core.plan.schema import Plan
from zerotui.core.run.launcher import gpu_choice_problem, hostfile_problem


def not_a_folder(folder: Path) -> Optional[str]:
    """Why ``folder`` can never be a folder here (core/hardware/disks.py's rule, shared with the estimate's
    NVMe room); None when it is one or could be made as one."""
    return not_a_folder_here(folder)


def nvme_path_warning(plan: Plan) -> Optional[str]:
    """For ``estimate`` and ``export``, which may plan for another machine and so do not refuse: the NVMe
    offload folder that this machine could not use (``preflight`` refuses it for ``train``)."""
    if not plan.uses_nvme() or plan.nvme_path is None:
        return None
    problem = not_a_folder(Path(plan.nvme_path).expanduser())
    if problem is None:
        return None
    return (f"the NVMe offload folder {problem}: NVMe offload cannot use it on this machine (`zerotui train` "
            "here refuses it); fine if the plan is for another machine where it is a folder, else give "
            "--nvme-path (nvme_path in a plan file) a folder on a local NVMe disk")


def check_writable(folder: Path, what: str, hint: str, parents: bool = True) -> None:
    """Create ``folder`` if needed and write (then remove) a small file in it. ``parents=False``: only
    the last part of the path may be missing."""
    problem = not_a_folder(folder)
    if problem is not None:
        raise HardwareError(f"{what} {problem}", hint)
    if not parents and not os.path.lexists(folder.parent):
        raise HardwareError(f"{what} {folder} cannot be made: {folder.parent} does not exist (a typo, or a "
                            "disk that is not mounted?)", hint)
    try:
        folder.mkdir(parents=parents, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".zerotui-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise HardwareError(f"{what} {folder} is not writable ({err.strerror or err})", hint) from None


def preflight(plan: Plan, hardware: Hardware, spec: Any = None, force: bool = False) -> Budget:
    """Refuse a plan that cannot run here; returns its memory Budget. ``spec``: the model's ModelSpec
    (looked up from the plan when None)."""
    problem = gpu_choice_problem(plan, hardware)
    if problem is not None:
        raise HardwareError(problem[1], problem[2])
    hostfile_problem(plan)  # DeepSpeed's runner would fail on it with the reason only in worker.log
    if plan.uses_nvme():
        assert plan.nvme_path is not None  # the Plan's own validator guarantees it
        # a missing parent is refused: a mistyped mount point would swap to whichever disk holds "/"
        check_writable(Path(plan.nvme_path).expanduser(), "the NVMe offload folder",
                       "give --nvme-path a folder on a local NVMe disk that you can write to", parents=False)
        from zerotui.core.deepspeed.prebuild import AIO_OP, LIBAIO_HINT, unbuildable

        why = unbuildable(AIO_OP)  # refused here, not minutes later inside deepspeed.initialize
        if why:
            raise HardwareError(why, LIBAIO_HINT)
    if plan.kernels == "liger":  # insisted on: refuse here, not after the model has loaded
        from zerotui.core.model.kernels import require_planned
        from zerotui.core.model.spec import spec_for_plan

        spec = spec if spec is not None else spec_for_plan(plan)
        require_planned(plan, spec.arch, hardware.gpu_count > 0)
    budget = estimate(plan, hardware, spec)
    if plan.uses_nvme() and not force:
        from zerotui.core.deepspeed.memlock import HINT, limit_problem

        locked = limit_problem(budget.locked_bytes)
        if locked:
            raise HardwareError(locked, HINT)
    if budget.fits or force:
        return budget
    raise HardwareError(f"the plan does not fit this machine: {budget.summary()}",
                        "`zerotui fit` lists plans that fit; --force launches anyway")
