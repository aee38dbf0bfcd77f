"""The real zerotui worker (``core/worker.main`` with the real DeepSpeed engine), with numerical faults
injected from outside the product code. Used by ``scripts/faults/numerical.py`` and ``tests/unit/test_faults.py``.

    ZEROTUI_FAULT=overflow:12-40  python scripts/faults/fault_worker.py RUN_DIR [--resume]

``ZEROTUI_FAULT`` is a comma-separated list of ``KIND:FIRST-LAST`` (optimizer steps, 1-based, inclusive;
``FIRST-`` means "to the end"):

* ``overflow``: every gradient of those steps is multiplied by +inf in its backward hook, the way an fp16
  gradient overflows. The loss itself stays finite. DeepSpeed's own overflow check
  (``DeepSpeedZeroOptimizer.step``: ``check_overflow``) then skips the update, and in fp16 its
  ``DynamicLossScaler`` halves the scale: what an overflow storm does to a real run.
* ``nan_loss``: the loss of those steps is multiplied by NaN (a forward pass that blew up).

``ZEROTUI_FAULT_WRITE`` acts on checkpoint files written in the background (on the writer thread only):
``slow:SECONDS`` sleeps that long before each file (a slow disk: the window in which a kill or a stop
meets a write in flight); ``slow:SECONDS@STEPS`` also holds a checkpoint's first file until training has
taken STEPS more optimizer steps (at most 120 s); ``enospc`` fails each with ENOSPC (a disk that filled
during the write). With these, the host-RAM margin a snapshot leaves (``background_save.MARGIN_BYTES``) is
set to 0, so every file goes to the thread unless the host has no room at all. ``noroom`` makes the margin
larger than any host, so every file is written at once on the training thread (a host short of free RAM).

``ZEROTUI_FAULT_FP16=1`` lets DeepSpeed build fp16 training on this CPU: its CPU accelerator answers
``is_fp16_supported() -> False`` unless oneDNN has fp16 kernels (``accelerator/cpu_accelerator.py``), and
both zerotui's precheck and DeepSpeed's config check ask it. That one answer is overridden; everything
else (the fp16 weights, DeepSpeed's fp16 ZeRO optimizer and its dynamic loss scaler) is the real code.

Nothing here is imported by zerotui itself.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable


def parse_faults(spec: str) -> list[tuple[str, int, float]]:
    """'overflow:12-40,nan_loss:50-' -> [('overflow', 12, 40), ('nan_loss', 50, inf)]."""
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        kind, _, rng = part.partition(":")
        first, _, last = rng.partition("-")
        if kind not in ("overflow", "nan_loss") or not first.isdigit():
            raise SystemExit(f"fault_worker: bad ZEROTUI_FAULT entry {part!r} (KIND:FIRST-LAST)")
        out.append((kind, int(first), float(last) if last else float("inf")))
    return out


def _active(faults: list[tuple[str, int, float]], kind: str, step: int) -> bool:
    return any(k == kind and a <= step <= b for k, a, b in faults)


def install_write_fault(spec: str, log: Callable[[str], None]) -> None:
    import errno
    import threading
    import time

    from zerotui.core.train import background_save

    kind, _, arg = spec.partition(":")
    if kind not in ("slow", "enospc", "noroom"):
        raise SystemExit(f"fault_worker: bad ZEROTUI_FAULT_WRITE {spec!r} (slow:SECONDS[@STEPS], enospc or noroom)")
    if kind == "noroom":  # a host whose free RAM cannot hold any snapshot: every file written at once
        background_save.MARGIN_BYTES = 1 << 62
        log("background checkpoint writes: no host RAM for a snapshot")
        return
    seconds, _, behind = arg.partition("@")
    if kind == "slow" and not all(x.replace(".", "", 1).isdigit() for x in filter(None, (seconds, behind))) \
            or "." in behind:
        raise SystemExit(f"fault_worker: bad ZEROTUI_FAULT_WRITE {spec!r} (slow:SECONDS[@STEPS])")
    if kind == "slow" and behind:
        steps_made = _count_steps()
    original = background_save.write_file
    held: set[str] = set()

    def write_file(obj: Any, path: str) -> None:
        if threading.current_thread().name == "zerotui-checkpoint-writer":
            if kind == "slow":
                folder = os.path.dirname(path)
                if behind and folder not in held:
                    # A checkpoint's first file waits for training to take more steps: proof that training
                    # goes on while a write is in flight, however slow the machine (bounded: a loop that
                    # waited for the write would fail its test, not hang it).
                    held.add(folder)
                    start, deadline = steps_made[0], time.monotonic() + 120
                    while steps_made[0] < start + int(behind) and time.monotonic() < deadline:
                        time.sleep(0.05)
                time.sleep(float(seconds or 5))
            else:
                raise OSError(errno.ENOSPC, "No space left on device", path)
        original(obj, path)

    background_save.write_file = write_file
    # The write under test must go to the thread. Without a margin, only a host with no room at all for
    # the tiny model's copy writes it at once: neighbouring tests on a CI box can leave less than the
    # product's 2 GiB free, and the checkpoint is then written in the foreground (the test's premise gone).
    background_save.MARGIN_BYTES = 0
    log(f"background checkpoint writes: {spec} (no host-RAM margin)")


def _count_steps() -> list[int]:
    """The optimizer steps the engine has taken, kept current in a one-item list the writer thread reads."""
    from deepspeed.runtime.engine import DeepSpeedEngine

    made = [0]
    original = DeepSpeedEngine.step

    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        made[0] = int(self.global_steps)
        return out

    DeepSpeedEngine.step = step
    return made


def install(faults: list[tuple[str, int, float]], fp16: bool, log: Callable[[str], None]) -> None:
    import torch
    from deepspeed.runtime.engine import DeepSpeedEngine

    if fp16:
        from deepspeed.accelerator import get_accelerator

        acc = get_accelerator()
        if not acc.is_fp16_supported():
            cls = type(acc)
            cls.is_fp16_supported = lambda self: True
            cls.supported_dtypes = lambda self: [torch.float, torch.bfloat16, torch.float16]
            log("fp16 allowed on this CPU (accelerator capability overridden)")
    if not faults:
        return
    original = DeepSpeedEngine.forward

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        if not self.training:
            return out
        step = int(self.global_steps) + 1  # the optimizer step this micro-batch belongs to
        if _active(faults, "nan_loss", step):
            out.loss = out.loss * float("nan")
        if _active(faults, "overflow", step):
            for p in self.module.parameters():
                if p.requires_grad:
                    p.register_hook(_once(lambda g: g * float("inf")))
        return out

    DeepSpeedEngine.forward = forward
    log(f"faults injected: {faults}")


def _once(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A tensor hook that acts on one backward only (hooks stay registered on the parameter)."""
    state = {"used": False}

    def hook(grad: Any) -> Any:
        if state["used"]:
            return grad
        state["used"] = True
        return fn(grad)

    return hook


def main(argv: list[str]) -> int:
    faults = parse_faults(os.environ.get("ZEROTUI_FAULT", ""))
    fp16 = os.environ.get("ZEROTUI_FAULT_FP16") == "1"

    def log(message: str) -> None:
        sys.stderr.write(f"fault_worker: {message}\n")

    install(faults, fp16, log)
    if os.environ.get("ZEROTUI_FAULT_WRITE"):
        install_write_fault(os.environ["ZEROTUI_FAULT_WRITE"], log)
    from zerotui.core.run.worker import main as worker_main

    return worker_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
