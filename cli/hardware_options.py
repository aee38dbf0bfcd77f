"""--gpu-mem / --ram / --nvme-free: plan for a machine that is not this one (shared by estimate and fit).

With none of them, the budget is for this machine as detected. With any of them, the stated values
replace what was detected; a stated GPU size describes ``--gpus N`` GPUs (1 when --gpus is not given).
"""
from __future__ import annotations

import argparse

from zerotui.core.hardware.types import Hardware


def add_hardware_options(parser: argparse.ArgumentParser) -> None:
    grp = parser.add_argument_group("machine (default: this one, as detected)")
    grp.add_argument("--gpu-mem", metavar="SIZE", help="memory of each GPU, e.g. 24GiB, 80GB (plan for another GPU)")
    grp.add_argument("--ram", metavar="SIZE", help="host RAM of each node, e.g. 64GiB")
    grp.add_argument("--nvme-free", metavar="SIZE", help="free space on the NVMe disk, e.g. 1TB")


def hardware_from_args(args: argparse.Namespace, plan) -> Hardware:
    """This machine, with whatever the options state put in place (sizes are checked: exit 2 if bad)."""
    from zerotui.core.hardware.detect import detect, stated_hardware

    stated = {k: getattr(args, k, None) for k in ("gpu_mem", "ram", "nvme_free")}
    base = detect(probe_disks=bool(stated["nvme_free"] is None and plan.uses_nvme()))
    if not any(v is not None for v in stated.values()):
        return base
    gpus = (plan.gpus or 1) if stated["gpu_mem"] is not None else None
    return stated_hardware(gpu_mem=stated["gpu_mem"], gpus=gpus, ram=stated["ram"], nvme_free=stated["nvme_free"],
                           base=base)
