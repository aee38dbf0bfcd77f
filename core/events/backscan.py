"""The newest event of one type, found by reading ``events.jsonl`` backwards in blocks.

A list of runs reads only each file's last 256 KB (``core.run.overview``); on a long run the newest
``eval`` can be far older than that (an eval every few thousand steps, telemetry every second), and
the list lost it. Reading the whole file for every refresh is not an option either, so:

* blocks of ``BLOCK`` bytes from the end, each searched for the event's type as the writer spells it
  (``"type":"eval"``, ``stream.encode``'s compact separators) before any JSON is decoded;
* at most ``LIMIT`` bytes in all, so a runaway file costs a bounded read (measured on this machine:
  reading 100 MB from the page cache took 0.06 s and a ``rfind`` over it 0.04 s), and a line longer than
  ``LONGEST_LINE`` is passed over whole (only its start is looked for);
* what a scan found is remembered per file (inode, size): the next call on an append-only file reads
  only the bytes added since, so a list refreshed every two seconds pays the long scan once.
"""
from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from pathlib import Path

from zerotui.core.safe_read import open_file

BLOCK = 1 << 20
LIMIT = 512 << 20
#: A line longer than this is passed over, not kept: no event the worker writes comes near it, and
#: gathering a 1 GB line block by block copied it again with every block (110 s for `zerotui runs`).
LONGEST_LINE = 16 << 20
#: Files remembered at once; a runs folder with more than this just rescans the oldest ones.
REMEMBERED = 512

_lock = threading.Lock()
#: path and type -> (inode, where the whole lines scanned end, the newest event found there or None)
_seen: OrderedDict[str, tuple[int, int, dict | None]] = OrderedDict()


def _needle(type_: str) -> bytes:
    return b'"type":' + json.dumps(type_).encode()


def _complete_end(fh, start: int, end: int) -> int:
    """Where the last whole line in [start, end) ends: bytes after it are a line still being written."""
    pos = end
    while pos > start:
        lo = max(start, pos - BLOCK)
        fh.seek(lo)
        cut = fh.read(pos - lo).rfind(b"\n")
        if cut != -1:
            return lo + cut + 1
        pos = lo
    return start


def _scan(fh, type_: str, start: int, end: int, limit: int) -> tuple[dict | None, int]:
    """The newest event of ``type_`` in bytes [start, end) of ``fh`` (whole lines: ``end`` follows a
    newline and ``start`` begins a line), read backwards over at most ``limit`` bytes; and how many
    bytes were read."""
    needle = _needle(type_)
    carry = b""  # the head of the block read before: a line that began in the block about to be read
    skipping = False  # inside a line over LONGEST_LINE: read back to its start without keeping it
    pos = end
    floor = max(start, end - limit)
    while pos > floor:
        lo = max(floor, pos - BLOCK)
        fh.seek(lo)
        blob = fh.read(pos - lo)
        pos = lo
        if skipping:
            cut = blob.rfind(b"\n")
            if cut == -1:
                continue
            blob, skipping = blob[:cut + 1], False
        else:
            blob += carry
        whole_from = 0 if pos == start else blob.find(b"\n") + 1  # before it: a line begun further back
        if pos != start and whole_from == 0:  # one line longer than the block: keep reading it
            carry, skipping = _keep(blob)
            continue
        hit = blob.rfind(needle, whole_from)
        while hit != -1:
            a = blob.rfind(b"\n", 0, hit) + 1
            b = blob.find(b"\n", hit)
            try:
                ev = json.loads(blob[a:b])
            except ValueError:  # a damaged line: the next one back may still hold the event
                ev = None
            if isinstance(ev, dict) and ev.get("type") == type_:
                return ev, end - pos
            hit = blob.rfind(needle, whole_from, a) if a > whole_from else -1
        carry, skipping = _keep(blob[:whole_from])
    return None, end - pos


def _keep(head: bytes) -> tuple[bytes, bool]:
    """(what to carry into the next block back, whether to skip to the line's start instead): the head
    of a line begun further back is kept unless it is already longer than any event."""
    return (b"", True) if len(head) > LONGEST_LINE else (head, False)


def latest_of_type(path: Path | str, type_: str, limit: int = LIMIT) -> dict | None:
    """The newest event of ``type_`` in the events file (None when there is none within ``limit`` bytes
    of its end, or the file cannot be read)."""
    key = f"{os.path.abspath(path)}\0{type_}"
    try:
        with open_file(path) as fh:  # a FIFO or device in its place is refused at once, never waited on
            st = os.fstat(fh.fileno())
            with _lock:
                known = _seen.get(key)
            start, found = 0, None
            if known and known[0] == st.st_ino and known[1] <= st.st_size:
                start, found = known[1], known[2]  # append-only: only the bytes added since
            upto = _complete_end(fh, start, st.st_size)
            newer, _ = _scan(fh, type_, start, upto, limit)
    except OSError:
        return None
    found = newer or found
    with _lock:
        _seen[key] = (st.st_ino, upto, found)
        _seen.move_to_end(key)
        while len(_seen) > REMEMBERED:
            _seen.popitem(last=False)
    return found
