"""Hardware detection: GPUs through a faked NVML module, RAM through faked psutil / cgroup files, disks
through a fake /sys tree, and the real machine this runs on (no GPU here)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import psutil
import pytest

from nvml_fake import A100, H100, V100, GiB, NVMLError, NVMLError_DriverNotLoaded, NVMLError_LibraryNotFound, \
    NVMLError_NotSupported, fake  # noqa: E402

from zerotui.core.hardware import disks as disks_mod  # noqa: E402
from zerotui.core.hardware import hostmem  # noqa: E402
from zerotui.core.errors import HardwareError, PlanError  # noqa: E402
from zerotui.core.hardware.detect import detect, measure_write, parse_size, probe_write_speed, stated_hardware  # noqa: E402
from zerotui.core.hardware.types import Hardware  # noqa: E402


@pytest.fixture(autouse=True)
def _no_visible_devices_env(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)


def use_nvml(monkeypatch, module) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", module)


# -- the real machine -------------------------------------------------------------------------------
def test_detect_on_this_machine_imports_no_torch_and_round_trips():
    # Not importing torch is what keeps detection quick (its time is measured by benchmarks/hardware_timing.py,
    # not asserted here: a timed unit test only measures how busy the CI machine is).
    code = ("import sys, json; from zerotui.core.hardware.detect import detect; hw = detect(); "
            "print(json.dumps({'torch': 'torch' in sys.modules, 'hw': hw.to_dict()}))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out["torch"] is False
    hw = Hardware.from_dict(out["hw"])
    assert hw.ram_total_bytes > 0 and hw.cpu_threads >= 1 and hw.cpu_model
    assert hw.shm_total_bytes > 0
    assert any(d.mountpoint == "/" or "/" in d.other_mountpoints for d in hw.disks)
    if not Path("/dev/nvidia0").exists():
        assert hw.gpus == [] and hw.nvml_error  # says why, instead of silently showing nothing
    assert Hardware.from_dict(json.loads(json.dumps(hw.to_dict()))) == hw


# -- NVML ------------------------------------------------------------------------------------------
def test_no_pynvml_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    hw = detect(probe_disks=False)
    assert hw.gpus == []
    assert "nvidia-ml-py is not installed" in hw.nvml_error
    assert hw.ram_total_bytes > 0  # the rest is still detected


def test_nvml_library_missing(monkeypatch):
    use_nvml(monkeypatch, fake(H100, init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found")))
    hw = detect(probe_disks=False)
    assert hw.gpus == [] and "no NVIDIA driver" in hw.nvml_error


def test_nvml_init_error_other(monkeypatch):
    use_nvml(monkeypatch, fake(H100, init_error=NVMLError_DriverNotLoaded("Driver Not Loaded")))
    assert "driver not loaded" in detect(probe_disks=False).nvml_error.lower()
    use_nvml(monkeypatch, fake(H100, init_error=OSError("libnvidia-ml.so.1: wrong ELF class")))
    assert "wrong ELF class" in detect(probe_disks=False).nvml_error


def test_h100_details_and_shutdown(monkeypatch):
    nvml = fake(H100, H100)
    use_nvml(monkeypatch, nvml)
    hw = detect(probe_disks=False)
    assert [g.index for g in hw.gpus] == [0, 1] and hw.gpu_count == 2
    g = hw.gpus[0]
    assert g.name == "NVIDIA H100 80GB HBM3" and g.total_bytes == 80 * GiB and g.free_bytes == 79 * GiB
    assert g.compute_capability == (9, 0) and g.bf16 and g.power_limit_w == 700.0
    assert (g.pcie_gen, g.pcie_width) == (4, 16) and g.uuid.startswith("GPU-") and g.error == ""
    assert hw.driver_version == "550.54.15" and hw.cuda_driver_version == "12.4"
    assert hw.nvml_error == "" and hw.bf16_supported
    assert nvml.inits == nvml.shutdowns == 1  # NVML is closed again after detection


def test_v100_has_no_bf16_and_mixed_machine_is_not_bf16(monkeypatch):
    use_nvml(monkeypatch, fake(V100, A100))
    hw = detect(probe_disks=False)
    assert [g.bf16 for g in hw.gpus] == [False, True]
    assert hw.gpus[0].compute_capability == (7, 0)
    assert not hw.bf16_supported  # every rank must support it
    assert hw.gpu_total_bytes == 32 * GiB  # the smallest GPU bounds a data-parallel plan


def test_two_gpus_one_fails_queries(monkeypatch):
    nvml = fake(H100, dict(H100, fail={"nvmlDeviceGetMemoryInfo": NVMLError("GPU is lost"),
                                       "nvmlDeviceGetEnforcedPowerLimit": NVMLError_NotSupported("Not Supported")}))
    use_nvml(monkeypatch, nvml)
    hw = detect(probe_disks=False)
    assert hw.gpu_count == 2
    ok, bad = hw.gpus
    assert ok.total_bytes == 80 * GiB and ok.error == ""
    assert bad.total_bytes == 0 and bad.power_limit_w is None and bad.bf16  # cc still read
    assert "GPU is lost" in bad.error and "Not Supported" in bad.error
    # memory is essential (a plan needs it), the power limit is not: only the former becomes a note
    assert any(n.startswith("GPU 1:") and "GPU is lost" in n for n in hw.notes)
    assert not any("Not Supported" in n for n in hw.notes)


def test_optional_query_missing_on_consumer_card(monkeypatch):
    use_nvml(monkeypatch, fake(dict(name="NVIDIA GeForce RTX 4090", total=24 * GiB, cc=(8, 9),
                                    fail={"nvmlDeviceGetMaxPcieLinkGeneration": NVMLError_NotSupported("x")})))
    hw = detect(probe_disks=False)
    assert hw.gpus[0].pcie_gen is None and hw.gpus[0].pcie_width == 16 and hw.gpus[0].bf16
    assert hw.notes == [] or not any(n.startswith("GPU") for n in hw.notes)


@pytest.mark.parametrize("env, nvml_order", [
    ("2,0", [2, 0]),
    ("GPU-00000001", [1]),               # a unique UUID prefix is enough, as in CUDA
    ("3, 1", [3, 1]),
    ("1,9,0", [1]),                      # CUDA stops at the first entry that matches no GPU
    ("1,1", [1]),
])
def test_cuda_visible_devices_subset(monkeypatch, env, nvml_order):
    use_nvml(monkeypatch, fake(H100, A100, V100, H100))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", env)
    hw = detect(probe_disks=False)
    assert [g.nvml_index for g in hw.gpus] == nvml_order
    assert [g.index for g in hw.gpus] == list(range(len(nvml_order)))  # renumbered like cuda:N
    if len(nvml_order) < len(env.split(",")):
        assert any("matches no GPU" in n for n in hw.notes)


def test_cuda_visible_devices_empty_hides_all(monkeypatch):
    use_nvml(monkeypatch, fake(H100, H100))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    hw = detect(probe_disks=False)
    assert hw.gpus == [] and "hides every GPU" in hw.nvml_error


def test_mixed_models_warn_about_device_order(monkeypatch):
    use_nvml(monkeypatch, fake(V100, A100))
    assert any("CUDA_DEVICE_ORDER=PCI_BUS_ID" in n for n in detect(probe_disks=False).notes)
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    assert not any("CUDA_DEVICE_ORDER" in n for n in detect(probe_disks=False).notes)


def test_unexpected_nvml_exception_does_not_escape(monkeypatch):
    nvml = fake(H100)
    nvml.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(RuntimeError("driver bug"))
    use_nvml(monkeypatch, nvml)
    hw = detect(probe_disks=False)
    assert hw.gpus == [] and "driver bug" in hw.nvml_error


# -- RAM and cgroups ----------------------------------------------------------------------------------
def _fake_proc(tmp_path: Path, cgroup: str, mountinfo: str) -> None:
    proc = tmp_path / "proc_self"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text(mountinfo)


def _vm(total: int, available: int):
    return lambda: types.SimpleNamespace(total=total, available=available)


def test_cgroup_v2_limit_smaller_than_ram(monkeypatch, tmp_path):
    _fake_proc(tmp_path, "0::/kubepods/pod1/ctr\n",
               "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
    root = tmp_path / "sys/fs/cgroup"
    leaf = root / "kubepods/pod1/ctr"
    leaf.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (leaf / "memory.max").write_text(f"{16 * GiB}\n")
    (leaf.parent / "memory.max").write_text(f"{8 * GiB}\n")  # the pod's limit binds its container
    (leaf / "memory.current").write_text(f"{3 * GiB}\n")
    (leaf / "memory.stat").write_text(f"anon 1\ninactive_file {1 * GiB}\n")
    monkeypatch.setattr(hostmem, "PROC_SELF", str(tmp_path / "proc_self"))
    monkeypatch.setattr(hostmem, "FS_ROOT", str(tmp_path))
    monkeypatch.setattr(psutil, "virtual_memory", _vm(64 * GiB, 60 * GiB))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    hw = detect(probe_disks=False)
    assert hw.ram_total_bytes == 8 * GiB and hw.ram_host_bytes == 64 * GiB
    assert hw.ram_available_bytes == 6 * GiB  # limit minus the working set (usage less page cache)
    assert hw.cgroup_memory_limit_bytes == 8 * GiB
    assert any("container memory limit 8.0 GiB" in n for n in hw.notes)


def test_cgroup_v1_unlimited_and_namespaced(monkeypatch, tmp_path):
    # cgroup v1, and a cgroup namespace: the mount's root is our own cgroup, /proc/self/cgroup says "/".
    _fake_proc(tmp_path, "4:memory:/\n0::/\n",
               "35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")
    mem = tmp_path / "sys/fs/cgroup/memory"
    mem.mkdir(parents=True)
    (mem / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (mem / "memory.usage_in_bytes").write_text(f"{2 * GiB}\n")
    (mem / "memory.stat").write_text("total_inactive_file 0\n")
    monkeypatch.setattr(hostmem, "PROC_SELF", str(tmp_path / "proc_self"))
    monkeypatch.setattr(hostmem, "FS_ROOT", str(tmp_path))
    cg = hostmem.read_cgroup_memory()
    assert cg.version == 1 and cg.limit is None and cg.working_set == 2 * GiB
    (mem / "memory.limit_in_bytes").write_text(f"{4 * GiB}\n")
    assert hostmem.read_cgroup_memory().limit == 4 * GiB


def test_psutil_failure_is_a_note_not_a_crash(monkeypatch):
    def boom():
        raise OSError("/proc/meminfo unreadable")
    monkeypatch.setattr(psutil, "virtual_memory", boom)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    hw = detect(probe_disks=False)
    assert hw.ram_total_bytes == 0 and any("RAM could not be read" in n for n in hw.notes)


# -- disks ----------------------------------------------------------------------------------------
def _block(sys_root: Path, devpath: str, rotational: str | None = None, partition: bool = False) -> Path:
    """A device directory under sys/devices plus its sys/class/block/<name> link, like the kernel's."""
    d = sys_root / "devices" / devpath
    d.mkdir(parents=True, exist_ok=True)
    if rotational is not None:
        (d / "queue").mkdir(exist_ok=True)
        (d / "queue/rotational").write_text(rotational + "\n")
    if partition:
        (d / "partition").write_text("1\n")
    link = sys_root / "class/block" / d.name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(d)
    return d


def _slave(holder: Path, member: Path) -> None:
    (holder / "slaves").mkdir(exist_ok=True)
    (holder / "slaves" / member.name).symlink_to(member)


@pytest.fixture
def fake_sys(tmp_path):
    s = tmp_path / "sys"
    nvme0 = _block(s, "pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1", "0")
    p1 = _block(s, "pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1/nvme0n1p1", partition=True)
    p2 = _block(s, "pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1/nvme0n1p2", partition=True)
    nvme1 = _block(s, "pci0000:00/0000:00:02.0/nvme/nvme1/nvme1n1", "0")
    _block(s, "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda", "0")     # SATA SSD
    sdb = _block(s, "pci0000:00/0000:00:1f.2/ata2/host1/target1:0:0/1:0:0:0/block/sdb", "1")  # spinning
    dm = _block(s, "virtual/block/dm-0")
    (dm / "dm").mkdir()
    (dm / "dm/name").write_text("vg-scratch\n")
    _slave(dm, p2)                                                     # LVM on an NVMe partition
    md = _block(s, "virtual/block/md0")
    for member in (nvme1, sdb):                                        # RAID of NVMe + HDD
        _slave(md, member)
    md1 = _block(s, "virtual/block/md1")
    _slave(md1, nvme1)
    _slave(md1, nvme0)
    del p1
    return s


def test_classify_from_fake_sys(fake_sys):
    classify = disks_mod.classify
    assert classify("/dev/nvme0n1p1", None, str(fake_sys)) == (True, False)
    assert classify("/dev/sda", None, str(fake_sys)) == (False, False)
    assert classify("/dev/sdb", None, str(fake_sys)) == (False, True)
    assert classify("/dev/mapper/vg-scratch", None, str(fake_sys)) == (True, False)  # dm -> nvme0n1p2 -> nvme0n1
    assert classify("/dev/dm-0", None, str(fake_sys)) == (True, False)
    assert classify("/dev/md0", None, str(fake_sys)) == (False, True)    # one spinning member slows it all
    assert classify("/dev/md1", None, str(fake_sys)) == (True, False)
    assert classify("tank/data", None, str(fake_sys)) == (False, None)   # ZFS dataset: unknown, not a guess
    assert classify("/dev/nvme0n1p1", None, str(fake_sys / "missing")) == (False, None)  # no /sys at all


def test_list_disks_from_mounts(fake_sys, tmp_path):
    points = {name: tmp_path / "mnt" / name for name in ("fast", "hdd", "lvm", "gone", "ro", "shm", "bind")}
    for name, p in points.items():
        if name != "gone":
            p.mkdir(parents=True)
    # Every fake mount is a folder on the same real filesystem, so distinct fstypes keep them apart;
    # "bind" shares "fast"'s fstype and device and must fold into it.
    mounts = "\n".join([
        f"/dev/nvme0n1p1 {points['fast']} ext4 rw,relatime 0 0",
        f"/dev/sdb {points['hdd']} xfs rw 0 0",
        f"/dev/mapper/vg-scratch {points['lvm']} btrfs rw 0 0",
        f"/dev/sda {points['gone']} f2fs rw 0 0",
        f"/dev/sda {points['ro']} ext3 ro,relatime 0 0",
        f"tmpfs {points['shm']} tmpfs rw 0 0",
        f"/dev/nvme0n1p1 {points['bind']} ext4 rw,relatime 0 0",
        "proc /proc proc rw 0 0",
        "/dev/nvme0n1p1 /etc/hostname ext4 rw 0 0",
    ]) + "\n"
    found, notes = disks_mod.list_disks(mounts, str(fake_sys))
    by_point = {d.mountpoint: d for d in found}
    assert set(by_point) == {str(points[n]) for n in ("fast", "hdd", "lvm", "ro")}
    fast = by_point[str(points["fast"])]
    assert fast.nvme and fast.rotational is False and fast.writable and fast.free_bytes > 0
    assert fast.other_mountpoints == [str(points["bind"])]
    assert by_point[str(points["hdd"])].rotational is True and not by_point[str(points["hdd"])].nvme
    assert by_point[str(points["lvm"])].nvme
    assert by_point[str(points["ro"])].writable is False
    assert any(str(points["gone"]) in n for n in notes)  # a mount that stat() refuses is skipped, with why


def test_mount_escapes_are_decoded(tmp_path):
    spaced = tmp_path / "my disk"
    spaced.mkdir()
    encoded = str(spaced).replace(" ", "\\040")
    found, _ = disks_mod.list_disks(f"/dev/sdz {encoded} ext4 rw 0 0\n", str(tmp_path / "nosys"))
    assert [d.mountpoint for d in found] == [str(spaced)]


# -- sizes and stated hardware ----------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("24GiB", 24 * GiB), ("24G", 24 * GiB), ("24g", 24 * GiB), ("24GB", 24 * 10**9), ("24 GiB", 24 * GiB),
    ("512MiB", 512 << 20), ("512M", 512 << 20), ("1.5TB", 1_500_000_000_000), ("2T", 2 << 40),
    ("4096", 4096), ("10B", 10), ("0", 0), (123, 123),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "GiB", "24XB", "-5G", "24 G B", "1.5", "abc", "1e9", True, -1, "24ib"])
def test_parse_size_errors_name_the_option(text):
    with pytest.raises(PlanError) as err:
        parse_size(text, "--gpu-mem")
    assert err.value.message.startswith("--gpu-mem:") and "24GiB" in err.value.hint


def test_stated_hardware_without_detection():
    hw = stated_hardware(gpu_mem="24GiB", gpus=2, ram="64GiB", nvme_free="2TB")
    assert hw.gpu_count == 2 and hw.gpu_total_bytes == 24 * GiB and hw.bf16_supported
    assert hw.ram_total_bytes == 64 * GiB and hw.nvme_disks[0].free_bytes == 2 * 10**12
    assert hw.source == "stated"
    assert not stated_hardware(gpu_mem="32GiB", bf16=False).bf16_supported


def test_stated_hardware_over_detected(monkeypatch):
    use_nvml(monkeypatch, fake(V100))
    base = detect(probe_disks=False)
    more = stated_hardware(gpus=4, base=base)
    assert more.gpu_count == 4 and {g.name for g in more.gpus} == {"Tesla V100-SXM2-32GB"}
    assert not more.bf16_supported and base.gpu_count == 1  # the base is not modified
    with pytest.raises(PlanError, match="--gpus"):
        stated_hardware(gpus=-1)
    with pytest.raises(PlanError, match="--gpu-mem is needed"):
        stated_hardware(gpus=2)
    with pytest.raises(PlanError, match="--ram"):
        stated_hardware(ram="lots")


# -- write probe ------------------------------------------------------------------------------------
def test_write_probe_measures_and_cleans_up(tmp_path):
    probe = measure_write(tmp_path, 8 << 20)
    assert probe.bytes_per_s > 0 and probe.size_bytes == 8 << 20
    assert list(tmp_path.iterdir()) == []
    assert probe_write_speed(tmp_path, 4 << 20) > 0


def test_write_probe_falls_back_when_o_direct_is_refused(tmp_path, monkeypatch):
    import errno

    real_open = os.open

    def no_direct(path, flags, mode=0o777):
        if flags & getattr(os, "O_DIRECT", 0):  # what tmpfs before Linux 6.6 and many FUSE mounts answer
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, mode)
    monkeypatch.setattr(disks_mod.os, "open", no_direct)
    probe = measure_write(tmp_path, 4 << 20)
    assert probe.direct is False and probe.bytes_per_s > 0
    assert list(tmp_path.iterdir()) == []


def test_write_probe_bad_targets(tmp_path):
    with pytest.raises(HardwareError, match="does not exist"):
        measure_write(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(HardwareError, match="not a folder"):
        measure_write(tmp_path / "file")
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    with pytest.raises(HardwareError, match="free; the write test needs"):
        measure_write(tmp_path, free + (1 << 30))


def test_write_probe_disk_full_leaves_nothing(tmp_path, monkeypatch):
    import errno

    real_write = os.write

    def full(fd, data):
        real_write(fd, data[:4096])
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(disks_mod.os, "write", full)
    with pytest.raises(HardwareError, match="filled up"):
        measure_write(tmp_path, 1 << 20)
    assert list(tmp_path.iterdir()) == []
