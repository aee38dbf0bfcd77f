"""The allocator-history summary's holes: free pages inside the pool at the peak of allocated, each put to
the allocation that last held it (benchmarks/memsnap/summary.py), on a hand-made trace."""
from benchmarks.memsnap.summary import GIB, growth_room, holes_at, last_holders, replay, top_of_pool

MIB = 2**20


def _ev(action, addr, size, name="x.py"):
    return {"action": action, "addr": addr, "size": size,
            "frames": [{"filename": f"/w/{name}", "line": 1, "name": "f"}]}


def test_a_freed_block_leaves_a_hole_named_after_it_and_unused_pages_are_never_held():
    events = [
        _ev("segment_map", 0, 100 * MIB),
        _ev("alloc", 0, 40 * MIB, "acts.py"),
        _ev("alloc", 40 * MIB, 30 * MIB, "loss.py"),
        _ev("free_completed", 0, 40 * MIB, "acts.py"),
        _ev("alloc", 0, 10 * MIB, "small.py"),
    ]
    holes = holes_at(events, len(events) - 1)
    assert holes == [(10 * MIB, 30 * MIB), (70 * MIB, 30 * MIB)]
    by = last_holders(events, len(events) - 1, holes)
    assert by["/w/acts.py:1 f"] == 30 * MIB
    assert by["never held"] == 30 * MIB


def test_unmapped_pages_are_not_holes_and_the_latest_free_wins():
    events = [
        _ev("segment_map", 0, 64 * MIB),
        _ev("alloc", 0, 32 * MIB, "old.py"),
        _ev("free_completed", 0, 32 * MIB, "old.py"),
        _ev("alloc", 0, 16 * MIB, "new.py"),
        _ev("free_completed", 0, 16 * MIB, "new.py"),
        _ev("alloc", 32 * MIB, 8 * MIB, "keep.py"),
        _ev("segment_unmap", 48 * MIB, 16 * MIB),
    ]
    holes = holes_at(events, len(events) - 1)
    assert holes == [(0, 32 * MIB), (40 * MIB, 8 * MIB)]
    by = last_holders(events, len(events) - 1, holes)
    assert by["/w/new.py:1 f"] == 16 * MIB and by["/w/old.py:1 f"] == 16 * MIB
    assert by["never held"] == 8 * MIB


def test_a_growth_names_the_free_ranges_before_it_and_the_free_tail_the_new_pages_extend():
    # 3 GiB mapped: a 1 GiB hole in the middle (freed activations under a live block) and 0.5 GiB free at
    # the top; a 2 GiB block fits neither, so the pool maps 1.5 GiB more and the block takes the tail too
    events = [
        _ev("segment_map", 0, 3 * GIB),
        _ev("alloc", 0, GIB, "states.py"),
        _ev("alloc", GIB, GIB, "acts.py"),
        _ev("alloc", 2 * GIB, GIB // 2, "partition.py"),
        _ev("free_completed", GIB, GIB, "acts.py"),
        _ev("segment_map", 3 * GIB, 3 * GIB // 2),
        _ev("alloc", 5 * GIB // 2, 2 * GIB, "copy.py"),
    ]
    g = replay(events)["growth"][-1]
    assert g["at"] == 5 and g["addr"] == 3 * GIB and "copy.py" in g["cause"]
    assert growth_room(events, g) == ("event       5 (stream None): 2 free, 1.500 GiB, the largest 1.000; "
                                      "0.500 free below the new pages")
    top = top_of_pool(events, g)
    assert top[0].startswith("-  0.500 GiB: free 0.500 GiB")
    assert "partition.py" in top[1] and top[2].startswith("-  2.000 GiB: free 1.000 GiB")
