"""Runs ``engine.train`` for one run folder in this process, as the worker would, minus the worker.

Used by the engine / checkpoint / merge tests: each DeepSpeed run gets its own process because
``init_distributed`` is process-global. Usage::

    python tests/engine_runner.py RUN_DIR [--resume] [--stop-after N] [--stop-now-after N]
                                          [--checkpoint-at N] [--pause-at N] [--fsize-limit BYTES]

Writes RUN_DIR/result.json: {state, reason, step} or {error, type}.

``ZEROTUI_FAULT`` and ``ZEROTUI_FAULT_FP16=1`` install scripts/faults/fault_worker.py's injected faults (and
fp16 on this CPU) before the engine is built, as that worker does.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--stop-after", type=int, help="request a graceful stop once this step event is seen")
    ap.add_argument("--stop-now-after", type=int, help="request an immediate stop after this step event")
    ap.add_argument("--checkpoint-at", type=int, help="request a checkpoint once this step event is seen")
    ap.add_argument("--pause-at", type=int, help="pause once this step event is seen")
    ap.add_argument("--unpause-after", type=float, default=1.0, help="seconds until the pause is lifted")
    ap.add_argument("--fsize-limit", type=int, help="RLIMIT_FSIZE for this process (a disk that fills up)")
    args = ap.parse_args()

    if args.fsize_limit:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize_limit, args.fsize_limit))

    if os.environ.get("ZEROTUI_FAULT") or os.environ.get("ZEROTUI_FAULT_FP16") == "1":
        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "faults"))
        import fault_worker

        fault_worker.install(fault_worker.parse_faults(os.environ.get("ZEROTUI_FAULT", "")),
                             os.environ.get("ZEROTUI_FAULT_FP16") == "1", lambda m: sys.stderr.write(m + "\n"))

    from zerotui.core.train.control import ControlState
    from zerotui.core.events.stream import EventWriter
    from zerotui.core.plan.schema import load_plan
    from zerotui.core.run.folder import RunPaths

    paths = RunPaths(args.run_dir)
    plan = load_plan(paths.plan)
    control = ControlState()
    writer = EventWriter(paths.events)

    rank = int(os.environ.get("RANK", "0") or 0)

    def emit(type_, **fields):  # the engine emits on every rank; rank 0 writes, as the worker does
        if rank == 0:
            writer.emit(type_, **fields)
        if type_ == "step":
            s = fields["step"]
            if args.stop_after is not None and s >= args.stop_after:
                control.request_stop("test asked to stop")
            if args.stop_now_after is not None and s >= args.stop_now_after:
                control.request_stop("test asked to stop now", now=True)
            if args.checkpoint_at is not None and s == args.checkpoint_at:
                control.checkpoint.set()
            if args.pause_at is not None and s == args.pause_at:
                control.pause()
                threading.Timer(args.unpause_after, control.unpause).start()

    out: dict = {}

    def run() -> None:
        from zerotui.core.train import engine as eng
        from zerotui.core.errors import ZeroTuiError

        try:
            r = eng.train(plan, paths, emit, control, resume=args.resume)
            out.update(state=r.state, reason=r.reason, step=r.step)
        except ZeroTuiError as err:
            out.update(error=err.one_line(), type=type(err).__name__)
        except BaseException as err:  # noqa: BLE001 - SystemExit in a thread would vanish silently
            import traceback

            traceback.print_exc()
            out.update(crash=f"{type(err).__name__}: {err}")

    # In a thread, as the worker runs it (DeepSpeed must not need the main thread).
    t = threading.Thread(target=run)
    t.start()
    t.join()
    writer.close()
    (paths.root / ("result.json" if rank == 0 else f"result-rank{rank}.json")).write_text(json.dumps(out))
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
