"""Resident pages of a process that belong to files it maps: what RSS counts that the run did not allocate.

Linux's own split (``/proc/PID/status``: RssAnon, RssFile, RssShmem; psutil's ``shared`` is the last two)
puts CUDA's pinned host buffers with the files: on the H200 a run with the optimizer on the CPU held 33.2 GiB
RSS of which 20.7 "shared", with a 2 GiB model file (benchmarks/results/seed-scenarios-rssfile-h200-2026-12-07.json).
Pinned buffers are mappings of the NVIDIA device files, which the kernel can never drop; the weights
transformers maps are a regular file's pages, which it can. So this reads the mapping each page belongs to
(``/proc/PID/smaps``) and counts the resident pages of regular files only: a path outside /dev, or a file in
/dev/shm (tmpfs: the pages belong to the file, and stay when the process goes).
"""
from __future__ import annotations

from typing import Optional


def _counts(path: bytes) -> bool:
    """Whether a mapping's path names a file whose pages are the file's, not the process's."""
    if not path.startswith(b"/"):
        return False  # anonymous memory, [heap], [stack], [vdso]...
    return not path.startswith(b"/dev/") or path.startswith(b"/dev/shm/")


def file_backed_rss(pid: int) -> Optional[int]:
    """Bytes of ``pid``'s resident pages that map regular files; None when its smaps cannot be read (the
    process is gone, or belongs to someone else)."""
    total, counting = 0, False
    try:
        with open(f"/proc/{pid}/smaps", "rb") as fh:
            for line in fh:
                head, _, rest = line.partition(b" ")
                if not head.endswith(b":"):  # a mapping's first line: "start-end perms offset dev inode path"
                    fields = rest.split(None, 4)
                    counting = len(fields) == 5 and _counts(fields[4].rstrip(b"\n").removesuffix(b" (deleted)"))
                elif counting and head == b"Rss:":
                    total += int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return total
