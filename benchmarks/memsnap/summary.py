"""What a CUDA allocator history (benchmarks/memsnap/sitecustomize.py) says about a run's peak.

    python -m benchmarks.memsnap.summary SNAPSHOT.pickle [--top 25]

Replays the trace: allocated and reserved over time, each time the pool grew (how much, what was
allocated then, and the allocation that made it grow, by its innermost frames outside torch), the live
blocks at the peak of allocated and at the peak of reserved, the holes at the peak of allocated (free
pages inside the pool, by the allocation that last held them: what the margin in core/estimate/margin.py
models), the free ranges before each large growth (why that allocation found no room), and the free
space at the end.
"""
from __future__ import annotations

import argparse
import bisect
import pickle
from collections import Counter

GIB = 2**30
SKIP = ("torch/utils/", "torch/_tensor", "torch/cuda/", "<frozen", "contextlib.py", "torch/nn/modules/module.py",
        "threading.py", "torch/autograd/", "torch/_ops.py", "torch/_compile", "torch/_dynamo")


def where(frames: list, n: int = 3) -> str:
    """The first ``n`` frames that are not the allocator's or torch's plumbing."""
    # Python frames only: the history also records C++ frames (unwind, the allocator), which name nothing
    picked = [f"{f['filename'].split('site-packages/')[-1]}:{f['line']} {f['name']}" for f in frames or []
              if f["filename"].endswith(".py") and not any(s in f["filename"] for s in SKIP)]
    return " < ".join(picked[:n]) or "?"


def replay(events: list) -> dict:
    live: dict[int, dict] = {}
    alloc = reserved = 0
    peak_alloc = peak_res = (0, -1)
    growth = []
    snap_alloc = snap_res = {}
    pending = None
    for i, e in enumerate(events):
        a, size = e["action"], e.get("size", 0)
        if a == "alloc":
            live[e["addr"]] = e
            alloc += size
            if pending is not None:
                pending["cause"] = f"{size / GIB:.3f} GiB from {where(e.get('frames'))}"
                pending["cause_size"] = size
                pending = None
            if alloc > peak_alloc[0]:
                peak_alloc, snap_alloc = (alloc, i), dict(live)
        elif a == "free_completed":
            if live.pop(e["addr"], None) is not None:
                alloc -= size
        elif a in ("segment_alloc", "segment_map"):
            reserved += size
            pending = {"at": i, "grew": size, "reserved": reserved, "allocated": alloc, "addr": e["addr"],
                       "stream": e.get("stream")}
            growth.append(pending)
            if reserved > peak_res[0]:
                peak_res, snap_res = (reserved, i), dict(live)
        elif a in ("segment_free", "segment_unmap"):
            reserved -= size
    return {"events": len(events), "peak_alloc": peak_alloc, "peak_res": peak_res, "growth": growth,
            "live_at_peak_alloc": snap_alloc, "live_at_peak_res": snap_res, "end_alloc": alloc, "end_res": reserved}


def holes_at(events: list, stop: int, least: int = 2**20) -> list[tuple[int, int]]:
    """The free ranges of at least ``least`` bytes inside the pool right after event ``stop``: what the pool
    maps (segments, or an expandable segment's mapped pages) less the live blocks."""
    mapped: dict[int, int] = {}
    live: dict[int, int] = {}
    for e in events[:stop + 1]:
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            mapped[e["addr"]] = e["size"]
        elif a in ("segment_free", "segment_unmap"):
            _unmap(mapped, e["addr"], e["size"])
        elif a == "alloc":
            live[e["addr"]] = e["size"]
        elif a == "free_completed":
            live.pop(e["addr"], None)
    holes = []
    used = sorted(live.items())
    for start, size in sorted(_merge(mapped)):
        pos, end = start, start + size
        for addr, n in used:  # sorted: the live blocks inside this range, in order
            if addr + n <= pos or addr >= end:
                continue
            if addr > pos:
                holes.append((pos, addr - pos))
            pos = max(pos, addr + n)
        if end > pos:
            holes.append((pos, end - pos))
    return [(a, n) for a, n in holes if n >= least]


def growth_room(events: list, g: dict, holes: list[tuple[int, int]] | None = None) -> str:
    """Why an allocation grew the pool: the free ranges before it (how many, their sum, the largest) and
    the free range that ends where the new pages begin, which the new block takes in with them.
    ``holes``: ``holes_at(events, g["at"] - 1)`` where the caller has it already."""
    holes = holes_at(events, g["at"] - 1) if holes is None else holes
    below = sum(n for a, n in holes if a + n == g["addr"])
    return (f"event {g['at']:7d} (stream {g.get('stream')}): {len(holes)} free, {sum(n for _, n in holes) / GIB:.3f} GiB, the largest "
            f"{max((n for _, n in holes), default=0) / GIB:.3f}; {below / GIB:.3f} free below the new pages")


def top_of_pool(events: list, g: dict, holes: list[tuple[int, int]] | None = None, n: int = 6) -> list[str]:
    """The ``n`` highest ranges (live blocks and free ranges of 1 MiB or more) below where the new pages
    begin, top first: what pins the top of the pool when an allocation cannot take the free space below
    it. ``holes`` as for ``growth_room``."""
    live: dict[int, tuple[int, int, dict]] = {}
    for i, e in enumerate(events[:g["at"]]):
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], i, e)
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    holes = holes_at(events, g["at"] - 1) if holes is None else holes
    below = [(a, m) for a, m in holes if a + m <= g["addr"]]
    items = [(a, f"free {m / GIB:.3f} GiB") for a, m in below]
    items += [(a, f"live {m / GIB:.3f} GiB, stream {e.get('stream')}, event {i}: {where(e.get('frames'), 2)}")
              for a, (m, i, e) in live.items() if a < g["addr"] and m >= 2**20]
    items.sort(reverse=True)
    return [f"-{(g['addr'] - a) / GIB:7.3f} GiB: {text}" for a, text in items[:n]]


def _unmap(mapped: dict[int, int], addr: int, size: int) -> None:
    """Take [addr, addr + size) out of the mapped ranges (an unmap may cover part of what one map added)."""
    for start, n in list(mapped.items()):
        lo, hi = max(start, addr), min(start + n, addr + size)
        if lo >= hi:
            continue
        del mapped[start]
        if start < lo:
            mapped[start] = lo - start
        if hi < start + n:
            mapped[hi] = start + n - hi


def _merge(mapped: dict[int, int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for start, n in sorted(mapped.items()):
        if out and out[-1][0] + out[-1][1] == start:
            out[-1][1] += n
        else:
            out.append([start, n])
    return [(a, n) for a, n in out]


def last_holders(events: list, stop: int, holes: list[tuple[int, int]]) -> Counter:
    """The holes' bytes by where the block that last held them was allocated (one walk back from ``stop``
    over every hole at once); "never held" for pages mapped and not used since."""
    by_site: Counter = Counter()
    left = sorted((a, a + n) for a, n in holes)  # disjoint, sorted: what no freed block has claimed yet
    for e in reversed(events[:stop + 1]):
        if not left:
            break
        if e["action"] != "free_completed":
            continue
        lo_e, hi_e = e["addr"], e["addr"] + e["size"]
        i = max(0, bisect.bisect_right(left, (lo_e, float("inf"))) - 1)
        j = i
        while j < len(left) and left[j][0] < hi_e:
            j += 1
        rest = []
        for lo, hi in left[i:j]:
            a, b = max(lo, lo_e), min(hi, hi_e)
            if a >= b:
                rest.append((lo, hi))
                continue
            by_site[where(e.get("frames"), 2)] += b - a
            rest += [r for r in ((lo, a), (b, hi)) if r[1] > r[0]]
        left[i:j] = rest
    by_site["never held"] += sum(hi - lo for lo, hi in left)
    return by_site


def table(live: dict, top: int) -> list[str]:
    by_site = Counter()
    count = Counter()
    for e in live.values():
        k = where(e.get("frames"), 2)
        by_site[k] += e["size"]
        count[k] += 1
    return [f"  {v / GIB:8.3f} GiB  {count[k]:5d} blocks  {k}" for k, v in by_site.most_common(top)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("snapshot")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    with open(a.snapshot, "rb") as f:
        snap = pickle.load(f)
    for dev, events in enumerate(snap.get("device_traces", [])):
        if not events:
            continue
        r = replay(events)
        print(f"device {dev}: {r['events']} events (the trace keeps the last ones only if it overflowed)")
        print(f"peak allocated {r['peak_alloc'][0] / GIB:.3f} GiB at event {r['peak_alloc'][1]}; "
              f"peak reserved {r['peak_res'][0] / GIB:.3f} GiB at event {r['peak_res'][1]}; "
              f"at the end allocated {r['end_alloc'] / GIB:.3f}, reserved {r['end_res'] / GIB:.3f} (replayed)")
        print("the pool grew (>= 64 MiB at a time):")
        for g in r["growth"]:
            if g["grew"] >= 64 * 2**20:
                print(f"  event {g['at']:7d}: +{g['grew'] / GIB:.3f} -> {g['reserved'] / GIB:.3f} GiB reserved, "
                      f"{g['allocated'] / GIB:.3f} allocated; {g.get('cause', '?')}")
        print("free ranges (1 MiB or more) just before each growth of, or for, 1 GiB or more; the free range the"
              " new pages extend (an expandable segment grows its last free block); the top of the pool below them:")
        for g in r["growth"]:
            if max(g["grew"], g.get("cause_size", 0)) >= GIB:
                holes = holes_at(events, g["at"] - 1)  # one replay for both lines
                print("  " + growth_room(events, g, holes))
                for line in top_of_pool(events, g, holes):
                    print("      " + line)
        print("live at the peak of allocated, by where it was allocated:")
        print("\n".join(table(r["live_at_peak_alloc"], a.top)))
        print("live at the peak of reserved:")
        print("\n".join(table(r["live_at_peak_res"], a.top)))
        holes = holes_at(events, r["peak_alloc"][1])
        print(f"holes at the peak of allocated (free ranges of 1 MiB or more inside the pool): {len(holes)}, "
              f"{sum(n for _, n in holes) / GIB:.3f} GiB, the largest {max((n for _, n in holes), default=0) / GIB:.3f};"
              " by the block that last held them:")
        for k, v in last_holders(events, r["peak_alloc"][1], holes).most_common(a.top):
            print(f"  {v / GIB:8.3f} GiB  {k}")
    segs = snap.get("segments", [])
    total = sum(s["total_size"] for s in segs)
    used = sum(s["allocated_size"] for s in segs)
    print(f"segments at the dump: {len(segs)}, {total / GIB:.3f} GiB reserved, {used / GIB:.3f} allocated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
