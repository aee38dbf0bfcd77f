"""Run one zerotui command against a folder on a disk that is full or read-only, for real.

Started by the test as ``unshare --mount python storage_fault.py ...``: in a mount namespace of its own,
so the mounts below vanish with this process even if it is killed, and nobody else sees them.

    --full DIR        a fresh 1 MiB tmpfs on DIR, filled until the kernel says ENOSPC
    --nearly-full DIR the same tmpfs with 512 KiB left (less than a run needs, more than a probe)
    --read-only DIR   DIR bind-mounted onto itself read-only (root cannot write through EROFS either)
    --seed SRC        copy SRC's tree into DIR first (a run folder to resume)

It prints one JSON object: the command's rc, stdout, stderr, and DIR's files (relative path -> sha256)
before and after, so the test sees that nothing was added, changed or left half-written.
"""
from __future__ import annotations

import argparse
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

FILLER = ".filler"


def files(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != FILLER:
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
        elif p.is_dir() and p != root:
            out[str(p.relative_to(root)) + "/"] = "dir"
    return out


def fill(root: Path, leave: int) -> None:
    with open(root / FILLER, "wb") as fh:
        try:
            while True:
                st = os.statvfs(root)
                room = st.f_bavail * st.f_frsize - leave
                if room <= 0:
                    break
                fh.write(b"\0" * min(room, 1 << 16))
                fh.flush()
        except OSError as err:
            if err.errno != errno.ENOSPC:
                raise


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", type=Path)
    ap.add_argument("--nearly-full", type=Path)
    ap.add_argument("--read-only", type=Path)
    ap.add_argument("--seed", type=Path)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    root = args.full or args.nearly_full or args.read_only
    if args.full or args.nearly_full:
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(root)], check=True)
    if args.seed:
        shutil.copytree(args.seed, root, dirs_exist_ok=True)
    if args.full or args.nearly_full:
        fill(root, 0 if args.full else 512 << 10)
    if args.read_only:
        subprocess.run(["mount", "--bind", str(root), str(root)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(root)], check=True)
    before = files(root)

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", *command], check=False, capture_output=True,
                       text=True, timeout=300)
    st = os.statvfs(root)
    print(json.dumps({"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr, "before": before,
                      "after": files(root), "free_bytes": st.f_bavail * st.f_frsize}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
