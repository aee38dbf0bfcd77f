"""Disks: which mounted filesystems could hold checkpoints or NVMe offload, what lies under them, and
how fast one writes.

NVMe offload (ZeRO-Infinity) streams optimizer state and parameters through DeepSpeed's async_io at
GB/s; a SATA SSD or a spinning disk under the same path makes each step minutes long. So each mount is
traced down to its physical drives through sysfs: partitions to their disk, device-mapper (LVM, LUKS)
and md RAID to the drives underneath (their ``slaves/``), and each drive's ``queue/rotational`` flag.
"""
from __future__ import annotations

import errno
import mmap
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from zerotui.core.errors import HardwareError
from zerotui.core.hardware.types import DiskInfo
from zerotui.core.sizes import format_bytes

MiB = 1 << 20

# Filesystems that hold no user data (kernel views, memory, packed images) or are read-only media.
_SKIP_FS = {
    "proc", "sysfs", "devtmpfs", "devpts", "tmpfs", "ramfs", "cgroup", "cgroup2", "securityfs", "pstore",
    "bpf", "debugfs", "tracefs", "configfs", "fusectl", "mqueue", "hugetlbfs", "autofs", "binfmt_misc",
    "rpc_pipefs", "nsfs", "squashfs", "efivarfs", "selinuxfs", "nfsd", "iso9660", "vfat", "fuse.lxcfs",
    "fuse.gvfsd-fuse", "fuse.portal", "fuse.snapfuse", "devfs", "none", "erofs",
}
_SKIP_PREFIXES = ("/proc", "/sys", "/dev", "/boot", "/snap", "/var/lib/docker", "/var/lib/containers",
                  "/var/lib/kubelet", "/run/containerd", "/run/user")
# statvfs on a dead network mount blocks; these get a deadline instead.
_NETWORK_FS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs",
               "fuse.glusterfs", "9p", "wekafs", "fuse.sshfs", "fuse.s3fs", "fuse.juicefs", "fuse.rclone"}
_NETWORK_TIMEOUT_S = 0.5


@dataclass
class Mount:
    source: str
    mountpoint: str
    fstype: str
    options: tuple[str, ...]


def _unescape(field: str) -> str:
    # /proc/mounts writes space, tab, newline and backslash as octal escapes (\040 ...).
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            mounts.append(Mount(_unescape(parts[0]), _unescape(parts[1]), parts[2], tuple(parts[3].split(","))))
    return mounts


def _worth_listing(m: Mount) -> bool:
    if m.fstype in _SKIP_FS:
        return False
    if m.fstype == "overlay":
        return m.mountpoint == "/"  # a container's root: its free space is real disk space
    if m.fstype.startswith("fuse.") and m.fstype not in _NETWORK_FS:
        return False
    return not any(m.mountpoint == p or m.mountpoint.startswith(p + "/") for p in _SKIP_PREFIXES)


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _sys_device_dir(source: str, st_dev: Optional[int], sys_root: str) -> Optional[str]:
    """The sysfs directory of the block device behind a mount, or None (ZFS, network, overlay)."""
    if source.startswith("/dev/"):
        name = os.path.basename(os.path.realpath(source))  # /dev/mapper/vg-root -> dm-0 on a real system
        candidate = f"{sys_root}/class/block/{name}"
        if os.path.exists(candidate):
            return os.path.realpath(candidate)
        if source.startswith("/dev/mapper/"):
            wanted = source[len("/dev/mapper/"):]
            try:
                names = os.listdir(f"{sys_root}/class/block")
            except OSError:
                names = []
            for dm in names:
                if _read(f"{sys_root}/class/block/{dm}/dm/name") == wanted:
                    return os.path.realpath(f"{sys_root}/class/block/{dm}")
    if st_dev is not None and os.major(st_dev) != 0:  # major 0: btrfs/overlay anonymous devices
        candidate = f"{sys_root}/dev/block/{os.major(st_dev)}:{os.minor(st_dev)}"
        if os.path.exists(candidate):
            return os.path.realpath(candidate)
    return None


def _leaf_drives(dev_dir: str, depth: int = 0) -> list[str]:
    """Whole physical drives under a block device: a partition's disk, a dm/md device's members."""
    if depth > 8:  # stacks are a few levels deep; anything deeper is a loop in a broken tree
        return []
    if os.path.exists(f"{dev_dir}/partition"):
        dev_dir = os.path.dirname(dev_dir)
    try:
        slaves = sorted(os.listdir(f"{dev_dir}/slaves"))
    except OSError:
        slaves = []
    if not slaves:
        return [dev_dir]
    out: list[str] = []
    for s in slaves:
        out += _leaf_drives(os.path.realpath(f"{dev_dir}/slaves/{s}"), depth + 1)
    return out


def classify(source: str, st_dev: Optional[int] = None, sys_root: str = "/sys") -> tuple[bool, Optional[bool]]:
    """(every drive under it is NVMe, any drive spins: True / False / None when unknown)."""
    dev_dir = _sys_device_dir(source, st_dev, sys_root)
    if dev_dir is None:
        return False, None
    drives = _leaf_drives(dev_dir)
    if not drives:
        return False, None
    nvme = all(os.path.basename(d).startswith("nvme") or "/nvme/" in d for d in drives)
    flags = [_read(f"{d}/queue/rotational") for d in drives]
    if any(f == "1" for f in flags):
        rotational: Optional[bool] = True
    elif flags and all(f == "0" for f in flags):
        rotational = False
    else:
        rotational = None
    return nvme, rotational


def _statvfs(path: str, network: bool) -> os.statvfs_result:
    if not network:
        return os.statvfs(path)
    box: dict = {}

    def target() -> None:
        try:
            box["v"] = os.statvfs(path)
        except OSError as err:
            box["e"] = err

    t = threading.Thread(target=target, daemon=True, name="zerotui-statvfs")
    t.start()
    t.join(_NETWORK_TIMEOUT_S)
    if "v" in box:
        return box["v"]
    raise box.get("e") or TimeoutError(f"no answer in {_NETWORK_TIMEOUT_S} s (a hung network mount?)")


def list_disks(mounts_text: Optional[str] = None, sys_root: str = "/sys") -> tuple[list[DiskInfo], list[str]]:
    """Mounted real filesystems, one entry per filesystem (bind mounts listed in ``other_mountpoints``)."""
    notes: list[str] = []
    if mounts_text is None:
        mounts_text = _read("/proc/self/mounts") or _read("/proc/mounts") or ""
        if not mounts_text:
            return [], ["no /proc/self/mounts: disks cannot be listed"]
    by_fs: dict[object, DiskInfo] = {}
    seen_points: set[str] = set()
    # Later mounts hide earlier ones on the same point, so the last entry per point is the live one.
    live = {m.mountpoint: m for m in parse_mounts(mounts_text)}
    order = {point: i for i, point in enumerate(live)}
    # Shortest mount point first, so "/" names the root filesystem rather than a bind mount of it.
    for m in sorted(live.values(), key=lambda m: (len(m.mountpoint), order[m.mountpoint])):
        if not _worth_listing(m) or m.mountpoint in seen_points:
            continue
        seen_points.add(m.mountpoint)
        try:
            st = os.stat(m.mountpoint)
            if not os.path.isdir(m.mountpoint):
                continue  # Docker bind-mounts single files (/etc/hosts); they are not places to write to
            vfs = _statvfs(m.mountpoint, m.fstype in _NETWORK_FS)
        except (OSError, TimeoutError) as err:
            notes.append(f"{m.mountpoint} ({m.fstype}) skipped: {err}")
            continue
        key = (st.st_dev, m.fstype)
        if key in by_fs:
            by_fs[key].other_mountpoints.append(m.mountpoint)
            continue
        nvme, rotational = classify(m.source, st.st_dev, sys_root)
        writable = "ro" not in m.options and os.access(m.mountpoint, os.W_OK)
        by_fs[key] = DiskInfo(device=m.source, mountpoint=m.mountpoint, fstype=m.fstype,
                              total_bytes=vfs.f_blocks * vfs.f_frsize, free_bytes=vfs.f_bavail * vfs.f_frsize,
                              nvme=nvme, rotational=rotational, writable=writable)
    return list(by_fs.values()), notes


def disk_for_path(path: str | Path, disks: list[DiskInfo]) -> Optional[DiskInfo]:
    """The listed filesystem a path lives on (longest mount point that contains it)."""
    target = os.path.realpath(path)
    best, best_len = None, -1
    for d in disks:
        for point in [d.mountpoint, *d.other_mountpoints]:
            inside = target == point or target.startswith(point.rstrip("/") + "/")
            if inside and len(point) > best_len:
                best, best_len = d, len(point)
    return best


#: Filesystems held in RAM: a swap folder there spends the host RAM that offloading to it should spare.
RAM_FS = ("tmpfs", "ramfs")


def fstype_at(path: str | Path, mounts_text: Optional[str] = None) -> Optional[str]:
    """The type of the filesystem that holds ``path`` (or would, for a folder not made yet): the mount with
    the longest mount point containing it, from /proc/mounts; None where that cannot be read."""
    text = mounts_text if mounts_text is not None else _read("/proc/mounts")
    if text is None:
        return None
    target = os.path.realpath(os.path.expanduser(str(path)))
    best, best_len = None, -1
    for m in parse_mounts(text):
        point = m.mountpoint
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > best_len:
            best, best_len = m.fstype, len(point)
    return best


def free_bytes_at(path: str | Path) -> Optional[int]:
    """Free bytes (for an unprivileged user) on the filesystem that holds ``path``, asked of its nearest
    folder that exists (a folder the run will create is not there yet); None where none answers. A hung
    network mount gives up after a few seconds (``_statvfs``) rather than hold the caller."""
    here = Path(os.path.abspath(os.path.expanduser(str(path))))
    for folder in (here, *here.parents):
        if folder.is_dir():
            try:
                st = _statvfs(str(folder), network=True)
            except (OSError, TimeoutError):
                return None
            return int(st.f_bavail * st.f_frsize)
    return None


def not_a_folder_here(path: str | Path) -> Optional[str]:
    """Why ``path`` can never be a folder on this machine, from what is on disk alone (nothing is made or
    written): a file (or a device, FIFO, socket) at it or at the nearest of its parents that exists
    (mkdir's bare 'Not a directory' names neither). None when it is a folder, could be made as one, or
    cannot be looked at (mkdir then says why). The free space of the disk holding such a file is no
    folder's room; a launch refuses such a path (core/run/preflight.py), an estimate warns."""
    shown = Path(path).expanduser()
    here = Path(os.path.abspath(shown))
    try:
        for at in (here, *here.parents):
            if at.exists():
                if at.is_dir():
                    return None
                kind = "a file" if at.is_file() else "a special file (a device, FIFO or socket)"
                return f"{shown} is {kind}, not a folder" if at == here else \
                    f"{shown} lies under {at}, which is {kind}, not a folder"
    except OSError:  # a parent we may not look into
        return None
    return None


def allocated_bytes(path: str | Path) -> int:
    """Bytes allocated on disk under ``path`` (st_blocks: DeepSpeed's swap files may be sparse); links are
    not followed. The worker's NVMe telemetry and the removal of a run's swap folder both count this."""
    total = 0
    stack = [str(path)]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        continue  # a swap file removed while we looked
        except OSError:
            continue
    return total


@dataclass
class WriteProbe:
    bytes_per_s: float
    direct: bool        # O_DIRECT (no page cache) was used; else buffered writes + fsync
    size_bytes: int
    seconds: float


def _check_target(path: Path, size_bytes: int) -> None:
    if not path.exists():
        raise HardwareError(f"NVMe path {path} does not exist",
                            "create the folder (mkdir -p) or choose one on a local NVMe drive")
    if not path.is_dir():
        raise HardwareError(f"NVMe path {path} is not a folder", "give a folder on a local NVMe drive")
    if not os.access(path, os.W_OK | os.X_OK):
        raise HardwareError(f"NVMe path {path} is not writable by this user",
                            "choose a folder you own, or fix its permissions")
    vfs = os.statvfs(path)
    if vfs.f_bavail * vfs.f_frsize < size_bytes:
        raise HardwareError(
            f"NVMe path {path} has {format_bytes(vfs.f_bavail * vfs.f_frsize)} free; the write test needs "
            f"{format_bytes(size_bytes)}", "free some space there or choose another drive")


def _write_all(fd: int, buf: mmap.mmap, size: int, chunk: int) -> None:
    view = memoryview(buf)
    left = size
    while left > 0:
        n = os.write(fd, view[: min(chunk, left)])
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        left -= n
    os.fsync(fd)


def measure_write(path: str | Path, size_bytes: int = 256 * MiB,
                  clock: Callable[[], float] = time.perf_counter, what: str = "NVMe path") -> WriteProbe:
    """Write ``size_bytes`` of random data to a temporary file under ``path`` and time it, then delete it.

    O_DIRECT bypasses the page cache so a 256 MiB test on a machine with 1 TB of RAM still measures the
    drive; filesystems that refuse it (tmpfs, some network and FUSE filesystems) get buffered writes and a
    final fsync. Random bytes, because ZFS and some SSD controllers compress zeros to nothing.
    ``what`` names the folder in messages: the wizard's NVMe path, or doctor's folder under test.
    """
    target = Path(path).expanduser()
    size = max(4096, (int(size_bytes) + 4095) // 4096 * 4096)  # O_DIRECT wants block-aligned lengths
    _check_target(target, size)
    chunk = min(8 * MiB, size)
    buf = mmap.mmap(-1, chunk)  # anonymous mmap: page-aligned, as O_DIRECT requires
    buf.write(os.urandom(chunk))
    file = target / f".zerotui-write-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    direct_flag = getattr(os, "O_DIRECT", 0)
    try:
        for direct in ([True, False] if direct_flag else [False]):
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (direct_flag if direct else 0)
            try:
                fd = os.open(file, flags, 0o600)
            except OSError as err:
                if direct and err.errno == errno.EINVAL:
                    continue
                raise
            try:
                start = clock()
                _write_all(fd, buf, size, chunk)
                seconds = max(clock() - start, 1e-9)
                return WriteProbe(size / seconds, direct, size, seconds)
            except OSError as err:
                if direct and err.errno == errno.EINVAL:
                    continue  # opened with O_DIRECT but the filesystem rejects such writes
                raise
            finally:
                os.close(fd)
        raise OSError(errno.EINVAL, "no write mode worked")
    except OSError as err:
        if err.errno == errno.ENOSPC:
            raise HardwareError(f"{what} {target} filled up during the write test",
                                "free some space there or choose another drive") from None
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise HardwareError(f"{what} {target} is not writable ({err.strerror})",
                                "choose a folder you own on a read-write drive") from None
        raise HardwareError(f"the write test under {target} failed: {err.strerror or err}",
                            "check the drive (dmesg) or choose another folder") from None
    finally:
        try:
            buf.close()
        except BufferError:
            pass  # a traceback still holds a view of it; the memory goes with the last reference
        try:
            os.unlink(file)
        except OSError:
            pass  # never created, or already gone: nothing to clean up


def probe_write_speed(path: str | Path, size_bytes: int = 256 * MiB) -> float:
    """Sequential write speed under ``path`` in bytes/s (see ``measure_write``)."""
    return measure_write(path, size_bytes).bytes_per_s
