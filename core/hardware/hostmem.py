"""Host memory as a training process can actually use it: RAM, the container's cgroup limit, swap.

In a container (Docker ``--memory``, Kubernetes limits, Slurm with cgroups) psutil reports the host's RAM,
but the kernel kills the job at the cgroup's limit. CPU offload plans are sized from host RAM, so the
usable total is the smaller of the two, and "used" is the cgroup's working set.

Reads cgroup v1 (``memory.limit_in_bytes``) and v2 (``memory.max``); the limit that binds is the smallest
one on the path from our cgroup up to the root of the hierarchy, since a parent's limit caps its children.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from zerotui.core.sizes import format_bytes

#: Where /proc/self and the root of the filesystem are; tests point these at a fake tree.
PROC_SELF = "/proc/self"
FS_ROOT = ""

# cgroup v1 writes "no limit" as the largest page-aligned signed 64-bit number (9223372036854771712);
# anything this big is not a real limit.
_UNLIMITED = 1 << 60


@dataclass
class CgroupMemory:
    limit: Optional[int]        # bytes, None when there is no limit
    working_set: Optional[int]  # usage minus reclaimable page cache (what docker stats shows)
    version: int                # 1 or 2


@dataclass
class HostMemory:
    total: int                  # usable RAM: min(psutil total, cgroup limit)
    available: int
    used: int
    host_total: int             # what psutil says the machine has
    cgroup_limit: Optional[int]
    swap_total: int
    swap_free: int


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _read_int(path: str) -> Optional[int]:
    text = _read(path)
    if text is None or text == "max":
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return None if value >= _UNLIMITED else value


def _stat_value(path: str, key: str) -> int:
    for line in (_read(path) or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _mounts() -> list[tuple[str, str, str, str]]:
    """(root within the hierarchy, mount point, fstype, super options) of each cgroup mount."""
    out = []
    for line in (_read(f"{PROC_SELF}/mountinfo") or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or not tail[0].startswith("cgroup"):
            continue
        out.append((fields[3], fields[4], tail[0], tail[2]))
    return out


def _cgroup_dir(mount_root: str, mount_point: str, path: str) -> str:
    """Our cgroup's directory under the mount. With a cgroup namespace the path is already relative."""
    base = FS_ROOT + mount_point
    rel = path[len(mount_root):] if mount_root != "/" and path.startswith(mount_root) else path
    candidate = os.path.normpath(base + "/" + rel.lstrip("/"))
    return candidate if os.path.isdir(candidate) else base


def read_cgroup_memory() -> Optional[CgroupMemory]:
    """This process's memory cgroup, or None when there is none to read (no /proc, no cgroup fs)."""
    lines = (_read(f"{PROC_SELF}/cgroup") or "").splitlines()
    v1_path = v2_path = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2_path = parts[2]
        elif "memory" in parts[1].split(","):
            v1_path = parts[2]
    for root, point, fstype, opts in _mounts():
        if fstype == "cgroup" and v1_path is not None and "memory" in opts.split(","):
            return _walk(_cgroup_dir(root, point, v1_path), FS_ROOT + point, 1)
    for root, point, fstype, _ in _mounts():
        if fstype == "cgroup2" and v2_path is not None and os.path.exists(f"{FS_ROOT}{point}/cgroup.controllers"):
            leaf = _cgroup_dir(root, point, v2_path)
            # A hybrid host mounts a v2 tree without the memory controller: then there is nothing to read.
            if "memory" in (_read(f"{FS_ROOT}{point}/cgroup.controllers") or "").split() or \
                    os.path.exists(f"{leaf}/memory.max"):
                return _walk(leaf, FS_ROOT + point, 2)
    return None


def _walk(leaf: str, top: str, version: int) -> CgroupMemory:
    limit_file, usage_file, inactive_key = (
        ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file") if version == 1
        else ("memory.max", "memory.current", "inactive_file"))
    limits = []
    here = leaf
    while True:
        value = _read_int(f"{here}/{limit_file}")
        if value is not None:
            limits.append(value)
        if os.path.normpath(here) == os.path.normpath(top) or len(here) <= len(top):
            break
        here = os.path.dirname(here)
    usage = _read_int(f"{leaf}/{usage_file}")
    working = None
    if usage is not None:
        working = max(0, usage - _stat_value(f"{leaf}/memory.stat", inactive_key))
    return CgroupMemory(limit=min(limits) if limits else None, working_set=working, version=version)


def read_host_memory() -> tuple[HostMemory, list[str]]:
    """RAM and swap as the training process can use them, and notes on anything that could not be read."""
    notes: list[str] = []
    total = available = host_total = swap_total = swap_free = 0
    try:
        import psutil  # noqa: PLC0415 - lazy: keeps `import zerotui.core.hardware.detect` cheap

        vm = psutil.virtual_memory()
        host_total, available = int(vm.total), int(vm.available)
    except Exception as err:  # no psutil, /proc unreadable
        notes.append(f"RAM could not be read ({err})")
        psutil = None
    if psutil is not None:
        try:
            sm = psutil.swap_memory()
            swap_total, swap_free = int(sm.total), int(sm.free)
        except Exception as err:
            notes.append(f"swap could not be read ({err})")
    total = host_total
    used = max(0, host_total - available)
    cg = None
    try:
        cg = read_cgroup_memory()
    except Exception as err:  # a malformed cgroup file must not stop detection
        notes.append(f"cgroup memory limit could not be read ({err})")
    limit = cg.limit if cg else None
    if limit is not None and (host_total == 0 or limit < host_total):
        total = limit
        used = cg.working_set if cg.working_set is not None else used
        available = max(0, min(available, limit - used))
        notes.append(f"container memory limit {format_bytes(limit)} is below the machine's "
                     f"{format_bytes(host_total)} of RAM: the limit is what training can use")
    return HostMemory(total=total, available=available, used=used, host_total=host_total,
                      cgroup_limit=limit, swap_total=swap_total, swap_free=swap_free), notes
