"""Python imports this module at start-up when this folder is on PYTHONPATH (benchmarks/memsnap/gpu.sh).
With ZT_MEMSNAP_DIR set, zerotui's worker process (python -m zerotui.core.run.worker RUN) records PyTorch's CUDA allocator
history (torch.cuda.memory._record_memory_history) and dumps it there at exit, for summary.py. Every
other process (the CLI, the supervisor, pip) is left alone. A diagnostic: it slows allocation."""
import os
import sys

_dir = os.environ.get("ZT_MEMSNAP_DIR")
# sys.orig_argv holds the module name ("-m zerotui.core.run.worker"); sys.argv does not yet at this point
if _dir and "zerotui.core.run.worker" in getattr(sys, "orig_argv", []) and "--spare" not in sys.orig_argv:
    import atexit

    import torch

    # Python frames name the call site; the default also records C++ frames, which name only the allocator
    torch.cuda.memory._record_memory_history(max_entries=int(os.environ.get("ZT_MEMSNAP_ENTRIES", "300000")),
                                             stacks="python")
    print(f"memsnap: recording the CUDA allocator in pid {os.getpid()}", file=sys.stderr, flush=True)

    def _dump() -> None:
        torch.cuda.memory._dump_snapshot(os.path.join(_dir, f"snapshot-{os.getpid()}.pickle"))

    atexit.register(_dump)
