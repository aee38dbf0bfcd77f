"""A spare's worker: ``python -m zerotui.core.run.worker --spare FOLDER`` (core/run/spare.py has the story).

It imports what a run's worker imports on its way to the first step — torch, DeepSpeed and its
accelerator, transformers' tokenizer and model classes (with the model registry behind them), PEFT,
datasets, and Liger's kernels where they are installed — loads the DeepSpeed ops already built on this
machine, marks the spare ready, and reads one line
from stdin: the claim its supervisor passes on, or end-of-file when the spare ends unclaimed. Claimed,
it carries what it printed so far into the run's worker.log, writes there from then on, and becomes the
run's worker exactly as ``python -m zerotui.core.run.worker RUN [--resume]`` would.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from zerotui.core.plan import allocator
from zerotui.core.run import spare as sp
from zerotui.core.run.run_files import open_append

#: Carried into worker.log from the spare's own log at most (import warnings; a few KB in practice).
CARRY_BYTES = 1 << 20
#: Imported ahead, in the order a run imports them. Optional ones are skipped where not installed.
WARM = ("torch", "numpy", "zerotui.core.train.engine", "zerotui.core.model.load", "zerotui.core.data.prepare",
        "deepspeed", "transformers", "transformers.modeling_utils", "transformers.generation",
        "transformers.integrations", "transformers.models.auto.tokenization_auto",
        "transformers.models.auto.modeling_auto", "transformers.models.llama.modeling_llama", "datasets",
        "peft", "liger_kernel.transformers")


def warm_imports(modules: tuple[str, ...] = WARM) -> list[str]:
    """Import ``modules`` (those installed); the names that failed, with why (a spare that could not
    import something still serves: the run imports it again and reports for real)."""
    failed = []
    for name in modules:
        top = name.split(".")[0]
        try:
            if importlib.util.find_spec(top) is None:
                continue
            importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - any library's import error: the run meets it again
            failed.append(f"{name} ({type(err).__name__}: {err})")
    if "deepspeed" in sys.modules:
        try:  # the accelerator is chosen once per process; the run's first use would do it otherwise
            from deepspeed.accelerator import get_accelerator

            get_accelerator()
            failed += _load_built_ops()
        except Exception as err:  # noqa: BLE001
            failed.append(f"deepspeed accelerator ({type(err).__name__}: {err})")
    return failed


def _load_built_ops() -> list[str]:
    """Load the DeepSpeed ops this machine has built already (DeepSpeed keeps a loaded op for the
    process: the run's optimizer and collectives then skip the build check and the library load). An op
    not built yet is left to the run, which says when it compiles one: a spare never compiles."""
    import torch

    from zerotui.core.deepspeed.prebuild import all_ops, build, is_built

    failed = []
    for name in all_ops(torch.cuda.is_available()):
        try:
            if is_built(name):
                build(name)
        except Exception as err:  # noqa: BLE001 - the run loads it again and reports for real
            failed.append(f"op {name} ({type(err).__name__}: {err})")
    return failed


def main(folder: Path, run_worker: Callable[[list[str]], int],
         warm: Callable[[], list[str]] = warm_imports) -> int:
    started = time.monotonic()
    # Before torch is imported: a spare's allocator is fixed from here on (core/plan/allocator.py).
    allocator.set_for(os.environ)
    failed = warm()
    note = f"; not imported: {', '.join(failed)}" if failed else ""
    print(f"zerotui spare worker: libraries imported in {time.monotonic() - started:.1f} s{note}", flush=True)
    try:
        (folder / sp.READY).touch()
    except OSError:
        pass  # the folder is gone (the spare was stopped): stdin's end-of-file follows
    line = sys.stdin.readline()
    if not line:
        return 0  # ended unclaimed by its supervisor
    try:
        claim = json.loads(line)
        run, resume, cwd = Path(claim["run"]), bool(claim["resume"]), claim.get("cwd")
    except (ValueError, KeyError, TypeError):
        print(f"zerotui spare worker: its supervisor sent no run: {line[:200]!r}", flush=True)
        return 2
    if isinstance(cwd, str):
        try:
            os.chdir(cwd)  # as a worker started by that launch would be
        except OSError:
            pass
    _move_output(run / "worker.log")
    return run_worker([str(run)] + (["--resume"] if resume else []))


def _move_output(log: Path) -> None:
    """What the spare printed goes into the run's log, then everything after it."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        fd = open_append(log)
    except OSError as err:
        print(f"zerotui spare worker: cannot open {log} ({err}); output stays in the spare's log", flush=True)
        return
    before = _spare_output()
    if before:
        os.write(fd, b"--- the spare worker's output before it took this run ---\n" + before
                 + (b"" if before.endswith(b"\n") else b"\n") + b"--- end of the spare's output ---\n")
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _spare_output() -> Optional[bytes]:
    """The spare's log, through this process's own stdout (its folder may be gone already)."""
    try:
        if not stat.S_ISREG(os.fstat(1).st_mode):
            return None  # a terminal or a pipe: nothing to carry, and reading it would wait
        with open("/proc/self/fd/1", "rb") as f:
            return f.read(CARRY_BYTES)
    except OSError:
        return None
