"""zerotui's loop without the worker: ``engine.train`` in this process with events kept in memory only
(no file writes, no telemetry, no heartbeat). The 'events off' side of the overhead measurement.

    python -m benchmarks.throughput.engine_side RUN_DIR OUT.json
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> int:
    t0 = time.time()
    run_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    from zerotui.core.train.control import ControlState
    from zerotui.core.train.engine import train
    from zerotui.core.events.stream import make_event
    from zerotui.core.plan.schema import load_plan
    from zerotui.core.run.folder import RunPaths

    events: list[dict] = []

    def emit(type_, **fields):
        events.append(make_event(type_, **fields))

    paths = RunPaths(run_dir)
    result = train(load_plan(paths.plan), paths, emit, ControlState())
    out.write_text(json.dumps({"process_start": t0, "state": result.state, "events": events}))
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
