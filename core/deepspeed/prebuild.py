"""DeepSpeed's just-in-time ops, built ahead of need (``zerotui doctor --build-ops``, and in the background
when the wizard opens) and, when a run must build one itself, said so as a start-up phase.

A run loads one optimizer op — ``cpu_adam`` with the optimizer offloaded, ``fused_adam`` otherwise — and,
on the CPU accelerator, ``deepspeed_shm_comm`` for its collectives. The first load compiles it (30–90 s
here, ~40 s on the H200) into torch's extension cache (``opbuild.build_root``), where every later run
and login finds it. Without a word, that compile looked like a hang in "initialising DeepSpeed".
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from zerotui.core.deepspeed.opbuild import build_root, clear_stale_build_locks, put_interpreter_bin_on_path

#: Op name -> the accelerator's builder class name (deepspeed/ops/op_builder).
BUILDERS = {"cpu_adam": "CPUAdamBuilder", "fused_adam": "FusedAdamBuilder",
            "deepspeed_shm_comm": "ShareMemCommBuilder", "async_io": "AsyncIOBuilder"}

#: NVMe offload's reads and writes (DeepSpeed's swap_tensor), built against libaio.
AIO_OP = "async_io"

#: What makes async_io buildable, for the message that says it is not.
LIBAIO_HINT = ("sudo apt install libaio-dev (Debian/Ubuntu), sudo dnf install libaio-devel (RHEL/Fedora), or "
               "conda install -c conda-forge libaio with CFLAGS/LDFLAGS pointing at $CONDA_PREFIX; or offload "
               "to cpu instead of nvme")


#: The CPU accelerator's collectives, loaded when the process group is set up.
COMM_OP = "deepspeed_shm_comm"


def ops_for(plan: Any, on_gpu: bool) -> list[str]:
    """The JIT ops a run of ``plan`` loads (see the module docstring)."""
    ops = ["cpu_adam" if plan.offload_optimizer != "none" else "fused_adam"]
    if not on_gpu:
        ops.append(COMM_OP)
    if plan.uses_nvme():
        ops.append(AIO_OP)
    return ops


def unbuildable(name: str) -> Optional[str]:
    """Why op ``name`` can be neither loaded nor compiled here, in a sentence; None where it can. Asks
    DeepSpeed's builder (``is_compatible``: for async_io, whether libaio's headers and library are
    found), so it imports DeepSpeed: call it where a plan needs the op, not on every launch."""
    if is_built(name):
        return None
    from deepspeed.accelerator import get_accelerator

    builder = get_accelerator().create_op_builder(BUILDERS[name])
    if builder is None:
        return f"DeepSpeed has no {name} op for the {get_accelerator().device_name()} accelerator"
    if not builder.is_compatible(False):
        if name == AIO_OP:
            return ("DeepSpeed's async_io op, which NVMe offload reads and writes through, cannot be built: "
                    "libaio was not found")
        return f"DeepSpeed's {name} op cannot be built on this machine (`ds_report` says why)"
    return None


def all_ops(on_gpu: bool) -> list[str]:
    """What any plan on this machine may load: both optimizers, and the CPU's collectives without a GPU;
    in the order a first run needs them (the collectives load first, and the built-in demo and most
    plans keep the optimizer on the device), so the wizard's background build finishes what the first
    launch waits for before it starts on the rest. Measured on the README's path (a fresh machine, a launch
    seconds after the wizard opened): built cpu_adam first, the run compiled its two ops beside it, 81 s
    and 74 s (benchmarks/results/newcomer-2026-12-02.json)."""
    return ([] if on_gpu else [COMM_OP]) + ["fused_adam", "cpu_adam"]


def is_built(name: str) -> bool:
    """Pre-built into the DeepSpeed wheel, or compiled into torch's extension cache already."""
    import torch

    try:
        from deepspeed.git_version_info import installed_ops
    except Exception:  # noqa: BLE001 - an unusual DeepSpeed build: look at the cache only
        installed_ops = {}
    if installed_ops.get(name):
        return True
    return (Path(build_root(torch)) / name / f"{name}.so").is_file()


def build(name: str) -> float:
    """Compile (or load) op ``name``; seconds it took. Raises what DeepSpeed raises when it cannot."""
    from deepspeed.accelerator import get_accelerator

    put_interpreter_bin_on_path()
    for lock in clear_stale_build_locks():
        print(f"zerotui: removed {lock}, left by an op build that was killed", file=sys.stderr)
    builder = get_accelerator().create_op_builder(BUILDERS[name])
    if builder is None:
        raise RuntimeError(f"DeepSpeed has no {name} op for the {get_accelerator().device_name()} accelerator")
    started = time.monotonic()
    builder.load(verbose=False)
    return time.monotonic() - started


def build_missing(names: list[str], on_build: Optional[Callable[[str], None]] = None) -> dict[str, float]:
    """Build each of ``names`` not built yet (``on_build(name)`` first, to say so); seconds per op built."""
    built: dict[str, float] = {}
    for name in names:
        if is_built(name):
            continue
        if on_build is not None:
            on_build(name)
        built[name] = build(name)
    return built


def probably_built() -> bool:
    """Without importing torch (the TUI's first frame must not wait): each op's library is in some
    extension cache folder of torch's default root (``TORCH_EXTENSIONS_DIR`` or ~/.cache/torch_extensions)."""
    import glob
    import os

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                   "torch_extensions")
    return all(glob.glob(os.path.join(root, "*", name, f"{name}.so")) or glob.glob(os.path.join(root, name, f"{name}.so"))
               for name in ("cpu_adam", "fused_adam"))


def start_in_background(log: Optional[Path] = None) -> bool:
    """Build the missing ops in a detached, low-priority process (when the wizard opens: the user plans
    while it compiles, and the first launch does not). False when nothing needed starting."""
    import os
    import subprocess
    import sys

    if probably_built():
        return False
    if log is None:
        from zerotui.core.paths import cache_root

        log = cache_root() / "op-builds.log"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            subprocess.Popen([sys.executable, "-m", "zerotui.core.deepspeed.prebuild"], stdin=subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                             preexec_fn=lambda: os.nice(10))
    except OSError:
        return False  # a read-only cache or no fork: the first run builds, and says so
    return True


def main() -> int:
    import torch

    for name in all_ops(torch.cuda.is_available()):
        try:
            if not is_built(name):
                print(f"{name}: built in {build(name):.0f} s", flush=True)
        except Exception as err:  # noqa: BLE001 - the run that needs it reports the failure with its fix
            print(f"{name}: not built ({type(err).__name__}: {str(err)[:200]})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
