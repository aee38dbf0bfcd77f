"""Python imports this module at start-up when this folder is on PYTHONPATH. With ZT_HOSTSNAP_DIR set,
zerotui's worker process samples its own resident set (/proc/self/statm) every few milliseconds from a
thread and, each time it reaches a new high by more than ZT_HOSTSNAP_STEP_MB (64), records the main
thread's Python stack there. At exit the record goes to ZT_HOSTSNAP_DIR/hostsnap-<pid>.json for
summary.py. It names where host RAM grew, which PyTorch's allocator history cannot: that covers the GPU
only. A diagnostic: the sampler holds the GIL briefly at each sample."""
import os
import sys

_dir = os.environ.get("ZT_HOSTSNAP_DIR")
if _dir and "zerotui.core.run.worker" in getattr(sys, "orig_argv", []) and "--spare" not in sys.orig_argv:
    import atexit
    import json
    import threading
    import time
    import traceback

    _page = os.sysconf("SC_PAGE_SIZE")
    _step = int(float(os.environ.get("ZT_HOSTSNAP_STEP_MB", "64")) * 2**20)
    _events: list[dict] = []
    _state = {"high": 0, "mark": 0, "t0": time.monotonic()}

    def _rss() -> int:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _page

    def _stack() -> list[str]:
        # the deepest stack of any other thread: the worker trains in a thread while its main thread
        # watches the supervisor, so the main thread's stack says nothing
        me = threading.get_ident()
        stacks = [traceback.extract_stack(f) for t, f in sys._current_frames().items() if t != me]
        if not stacks:
            return []
        # innermost last; keep the frames that say whose allocation it is
        return [f"{os.path.basename(fs.filename)}:{fs.lineno} {fs.name}" for fs in max(stacks, key=len)[-14:]]

    _io: list[list[float]] = []

    def _disk() -> list[float]:
        """[t, bytes read, bytes written] by the whole process at the block layer (/proc/self/io): NVMe
        offload's O_DIRECT swap traffic counts here, the page cache's does not."""
        with open("/proc/self/io") as f:
            io = dict(line.split(": ") for line in f.read().splitlines() if ": " in line)
        return [round(time.monotonic() - _state["t0"], 3), int(io["read_bytes"]), int(io["write_bytes"])]

    def _sample() -> None:
        n = 0
        while True:
            n += 1
            if n % 100 == 0:  # every 0.2 s
                _io.append(_disk())
            rss = _rss()
            _state["high"] = max(_state["high"], rss)
            if rss > _state["mark"] + _step:  # a new high, _step above the last one recorded
                _events.append({"t": round(time.monotonic() - _state["t0"], 3), "rss": rss,
                                "grew": rss - _state["mark"], "stack": _stack()})
                _state["mark"] = rss
            time.sleep(0.002)

    threading.Thread(target=_sample, name="hostsnap", daemon=True).start()
    print(f"hostsnap: sampling host RAM in pid {os.getpid()}", file=sys.stderr, flush=True)

    def _dump() -> None:
        with open(os.path.join(_dir, f"hostsnap-{os.getpid()}.json"), "w") as f:
            json.dump({"peak": _state["high"], "events": _events, "io": _io + [_disk()]}, f, indent=1)

    atexit.register(_dump)
