"""Python imports this module at start-up when this folder is on PYTHONPATH (benchmarks/memsnap/gpu.sh).
With ZT_MEMSNAP_DIR set, zerotui's worker process (argv: one run folder) records PyTorch's CUDA allocator
history (torch.cuda.memory._record_memory_history) and dumps it there at exit, for summary.py. Every
other process (the CLI, the supervisor, pip) is left alone. A diagnostic: it slows allocation."""
import os
import sys

_dir = os.environ.get("ZT_MEMSNAP_DIR")
if _dir and len(sys.argv) == 2 and os.path.isdir(sys.argv[1]):
    import atexit

    import torch

    torch.cuda.memory._record_memory_history(max_entries=int(os.environ.get("ZT_MEMSNAP_ENTRIES", "300000")))
    print(f"memsnap: recording the CUDA allocator in pid {os.getpid()}", file=sys.stderr, flush=True)

    def _dump() -> None:
        torch.cuda.memory._dump_snapshot(os.path.join(_dir, f"snapshot-{os.getpid()}.pickle"))

    atexit.register(_dump)
