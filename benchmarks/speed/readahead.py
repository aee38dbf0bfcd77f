"""How fast this machine's disk fills the page cache with one reader or several (core/train/prefetch.py).

    python -m benchmarks.speed.readahead FOLDER --out readahead.json [--readers 1 4 8] [--repeats 2]

Every file under FOLDER is read once per measurement, the page cache dropped before each (needs root:
``/proc/sys/vm/drop_caches``), reader counts alternating; reported in MB/s.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def drop_caches() -> bool:
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        return True
    except OSError:
        return False


def read_with(files: list[Path], readers: int) -> tuple[int, float]:
    """The worker's own read-ahead (``prefetch.start``) with ``readers`` threads, budget unlimited."""
    from zerotui.core.train import prefetch

    t0 = time.perf_counter()
    for t in prefetch.start(files, budget=1 << 62, readers=readers):
        t.join()
    return sum(f.stat().st_size for f in files), time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--readers", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    files = sorted(p for p in a.folder.rglob("*") if p.is_file() and not p.is_symlink())
    if not files:
        raise SystemExit(f"{a.folder}: no files to read")
    rows = []
    for rep in range(a.repeats):
        for n in (a.readers if rep % 2 == 0 else a.readers[::-1]):
            dropped = drop_caches()
            done, secs = read_with(files, n)
            rows.append({"repeat": rep, "readers": n, "bytes": done, "seconds": round(secs, 2),
                         "MB_s": round(done / max(secs, 1e-9) / 1e6), "cache_dropped": dropped})
            print(json.dumps(rows[-1]), flush=True)
    a.out.write_text(json.dumps({"command": " ".join(sys.argv), "folder": str(a.folder), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
