"""A real, small training function for testing the worker without DeepSpeed's start-up cost.

It trains a two-layer MLP on a fixed regression task with AdamW, follows the engine's contract (``emit``
of run_started / step / checkpoint events, ``control`` read once per optimizer step, checkpoints written
whole before they are announced, resume from the newest complete one) and is run in a real worker
process by ``python tests/worker_helpers.py RUN_DIR [--resume]``.

``ZEROTUI_TEST_STEP_S`` slows each step down so a test can act mid-run; ``ZEROTUI_TEST_FAIL`` makes the
loop raise (``oom``, ``host_oom`` or ``error``) at the step given by ``ZEROTUI_TEST_FAIL_STEP``.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Result:
    state: str
    reason: str
    step: int


def _save(model, opt, step: int, ckpt_dir: Path, emit, keep: int = 2) -> None:
    import torch

    ckpt_dir.mkdir(parents=True, exist_ok=True)
    final = ckpt_dir / f"step{step:06d}.pt"
    tmp = final.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "rng": torch.get_rng_state()}, tmp)
    os.replace(tmp, final)  # complete before it is announced
    for old in sorted(ckpt_dir.glob("step*.pt"))[:-keep]:
        old.unlink()
    emit("checkpoint", step=step, path=str(final))


def small_train(plan: Any, paths: Any, emit, control, hardware=None, resume: bool = False) -> Result:
    import torch

    step_s = float(os.environ.get("ZEROTUI_TEST_STEP_S", "0"))
    fail = os.environ.get("ZEROTUI_TEST_FAIL", "")
    fail_step = int(os.environ.get("ZEROTUI_TEST_FAIL_STEP", "3"))
    emit("phase", name="building model", done=0, total=1)
    torch.manual_seed(plan.seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(256, 16)
    y = (x[:, :4].sum(dim=1, keepdim=True)).tanh()
    start = 0
    ckpt_dir = Path(paths.checkpoints)
    if resume:
        done = sorted(ckpt_dir.glob("step*.pt"))
        if done:
            state = torch.load(done[-1], weights_only=False)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            torch.set_rng_state(state["rng"])
            start = state["step"]
    total = plan.max_steps or 20
    emit("run_started", plan=plan.to_dict(), hardware=None, world_size=1, total_steps=total,
         resumed_from=start if resume else None, start_step=start)
    step = start
    while step < total:
        if control.stop_now.is_set():
            return Result("stopped", control.reason or "stopped at once", step)
        if control.stop.is_set():
            _save(model, opt, step, ckpt_dir, emit)
            return Result("stopped", control.reason or "stopped", step)
        if control.checkpoint.is_set():
            control.checkpoint.clear()
            _save(model, opt, step, ckpt_dir, emit)
        while not control.resume.wait(0.05):
            pass
        if control.stopping:
            continue
        step += 1
        t0 = time.perf_counter()
        if fail and step == fail_step:
            if fail == "oom":
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.6 GiB total)")
            if fail == "host_oom":
                raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: "
                                   "you tried to allocate 9000000000 bytes")
            raise ValueError("a bad value in the loop")
        idx = torch.randint(0, 256, (32,))
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step_s:
            time.sleep(step_s)
        if step % plan.log_interval == 0 or step == total:
            dt = time.perf_counter() - t0
            emit("step", step=step, epoch=0, loss=loss.item(), lr=1e-2, grad_norm=None, loss_scale=None,
                 skipped=0, samples_per_s=32 / dt, tokens_per_s=32 * 16 / dt, tflops=None, step_time=dt)
        if plan.save_interval and step % plan.save_interval == 0:
            _save(model, opt, step, ckpt_dir, emit)
    return Result("completed", f"reached step {total}", step)


if __name__ == "__main__":
    from zerotui.core.run.worker import main

    sys.exit(main(sys.argv[1:], train_fn=small_train))
