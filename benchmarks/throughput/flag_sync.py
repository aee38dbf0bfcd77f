"""What rank 0's per-step control broadcast costs (``core/train/rankflags.py``): the real ``FlagSync.exchange``
between N processes on one machine over its gloo group, timed over many calls.

    python -m benchmarks.throughput.flag_sync [--ranks 2] [--calls 2000] [--out FILE]

Every optimizer step pays one exchange, so its median against a step time says the overhead.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time


def _worker(rank: int, world: int, port: int, calls: int, queue) -> None:  # noqa: ANN001
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch.distributed as dist

    from zerotui.core.train.control import ControlState
    from zerotui.core.train.rankflags import FlagSync

    dist.init_process_group("gloo")
    sync = FlagSync(world, rank, ControlState(), save_minutes=30)
    for _ in range(50):  # warm-up: connection set-up is not the steady cost
        sync.exchange()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        sync.exchange()
        times.append(time.perf_counter() - t)
    if rank == 0:
        queue.put(times)
    dist.barrier()
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, a.ranks, port, a.calls, queue)) for r in range(a.ranks)]
    for p in procs:
        p.start()
    times = queue.get(timeout=600)
    for p in procs:
        p.join()
    us = sorted(t * 1e6 for t in times)
    result = {"ranks": a.ranks, "calls": a.calls, "median_us": round(statistics.median(us), 1),
              "p90_us": round(us[int(0.9 * len(us))], 1), "p99_us": round(us[int(0.99 * len(us))], 1),
              "cpu_count": os.cpu_count()}
    print(json.dumps(result))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
