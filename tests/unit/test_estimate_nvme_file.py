"""`zerotui estimate` (and fit/export, which share the plan options) with an --nvme-path that is a regular
file: a warning, not a refusal, and the NVMe row of the budget says its room is unknown instead of sizing
it by the free space of the disk that holds the file. A folder, and a folder not made yet (sized at its
nearest existing parent), keep their figures."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from zerotui.core.estimate.budget import estimate
from zerotui.core.hardware.disks import free_bytes_at, not_a_folder_here
from zerotui.core.hardware.types import DiskInfo, Hardware
from zerotui.core.plan.schema import Plan

NVME = ["--stage", "3", "--offload-optimizer", "nvme"]


def _plan(path) -> Plan:
    return Plan(name="n", stage=3, offload_optimizer="nvme", nvme_path=str(path))


def _machine(tmp_path) -> Hardware:
    """A detected machine whose one listed disk holds tmp_path, with 1 TiB free."""
    point = os.path.dirname(os.path.realpath(tmp_path))
    disk = DiskInfo(device="nvme0n1", mountpoint=point, fstype="ext4", total_bytes=2 << 40, free_bytes=1 << 40,
                    nvme=True, rotational=False)
    return Hardware(cpu_model="test", source="detected", disks=[disk], ram_total_bytes=64 << 30,
                    ram_available_bytes=64 << 30)


def test_a_file_has_no_nvme_room_but_a_folder_and_a_folder_to_be_made_do(tmp_path):
    hw = _machine(tmp_path)
    (tmp_path / "swap.img").write_bytes(b"x")
    on_file = estimate(_plan(tmp_path / "swap.img"), hw)
    # unknown, not short: the verdict leaves NVMe out (a warning, not a refusal: the plan may be for elsewhere)
    assert on_file.nvme_bytes > 0 and on_file.nvme_capacity == 0 and on_file.fits
    assert "is a file" in on_file.nvme_problem and "room unknown" in on_file.summary()
    assert any(w.startswith("NVMe room unknown") for w in on_file.warnings)
    under = estimate(_plan(tmp_path / "swap.img" / "sub"), hw)
    assert under.nvme_capacity == 0 and "lies under" in under.nvme_problem
    for folder in (tmp_path, tmp_path / "not-yet" / "swap"):
        b = estimate(_plan(folder), hw)
        assert b.nvme_capacity == 1 << 40 and b.nvme_problem == "" and b.to_dict()["nvme_problem"] is None


def test_stated_nvme_room_stands_for_a_path_that_is_a_file_here(tmp_path):
    """Planning for another machine (--nvme-free): its stated room is used, with a note; the disk holding
    the file here is not."""
    from zerotui.core.hardware.detect import stated_hardware

    (tmp_path / "f").write_bytes(b"x")
    hw = stated_hardware(nvme_free="3GiB", base=_machine(tmp_path))
    b = estimate(_plan(tmp_path / "f"), hw)
    assert b.nvme_capacity == 3 << 30 and b.nvme_problem == ""
    assert any("is a file, not a folder here" in w for w in b.warnings)


def test_not_a_folder_here(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    assert not_a_folder_here(tmp_path) is None and not_a_folder_here(tmp_path / "new" / "deeper") is None
    assert not_a_folder_here(tmp_path / "f") == f"{tmp_path / 'f'} is a file, not a folder"
    assert "lies under" in not_a_folder_here(tmp_path / "f" / "x")


def _estimate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", "estimate", "tiny-cpu-demo", *NVME, *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_cli_warns_and_says_the_room_is_unknown_in_text_and_json(tmp_path):
    swap = tmp_path / "swap.img"
    swap.write_bytes(b"x")
    r = _estimate("--nvme-path", str(swap), "--json")
    assert r.returncode == 0, r.stderr  # a warning, never a refusal (2) nor "does not fit" (3)
    assert "warning: the NVMe offload folder" in r.stderr
    out = json.loads(r.stdout)
    assert out["nvme_capacity"] == 0 and "is a file" in out["nvme_problem"]
    assert any(w.startswith("NVMe room unknown") for w in out["warnings"])
    text = _estimate("--nvme-path", str(swap))
    nvme_row = next(ln for ln in text.stdout.splitlines() if ln.startswith("NVMe "))
    assert "room unknown" in nvme_row and " of " not in nvme_row
    assert "NVMe room, which is unknown" in text.stdout.splitlines()[-1]
    folder = _estimate("--nvme-path", str(tmp_path / "to-make"), "--json")
    assert folder.returncode in (0, 3), folder.stderr
    got = json.loads(folder.stdout)
    assert got["nvme_problem"] is None and got["nvme_capacity"] > 0
    assert abs(got["nvme_capacity"] - free_bytes_at(tmp_path)) < 1 << 30  # the parent's disk, as before
