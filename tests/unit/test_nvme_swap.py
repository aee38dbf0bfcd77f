"""NVMe offload's swap folder: each run writes into its own folder inside the user's nvme_path (the
ds_config says so), and removing it touches nothing else there, whatever a tampered plan points at."""
from __future__ import annotations

import os

import pytest

from zerotui.core.deepspeed.config import build_ds_config
from zerotui.core.deepspeed.nvme_swap import SWAP_PREFIX, remove_swap, swap_dir
from zerotui.core.errors import HardwareError
from zerotui.core.plan.schema import Plan


def _nvme_plan(path, **fields) -> Plan:
    return Plan(model="tiny", data="sample", stage=3, offload_optimizer="nvme", offload_params="nvme",
                nvme_path=path, **fields)


def test_a_runs_ds_config_swaps_into_the_runs_own_folder(tmp_path):
    plan = _nvme_plan(tmp_path / "nvme")
    run = tmp_path / "runs" / "tiny-20261204-1"
    zero = build_ds_config(plan, 1, run_dir=run)["zero_optimization"]
    mine = str(tmp_path / "nvme" / f"{SWAP_PREFIX}tiny-20261204-1")
    assert zero["offload_optimizer"]["nvme_path"] == zero["offload_param"]["nvme_path"] == mine
    other = build_ds_config(plan, 1, run_dir=tmp_path / "runs" / "tiny-20261204-2")["zero_optimization"]
    assert other["offload_optimizer"]["nvme_path"] != mine  # two runs sharing nvme_path never share files
    # Exported without a run (zerotui config): the user's folder as given
    exported = build_ds_config(plan, 1)["zero_optimization"]
    assert exported["offload_optimizer"]["nvme_path"] == str(tmp_path / "nvme")


def test_removing_a_runs_swap_folder_leaves_everything_else(tmp_path):
    nvme, run = tmp_path / "nvme", tmp_path / "runs" / "r1"
    mine = swap_dir(nvme, run)
    (mine / "zero_stage_3" / "optimizer" / "rank0").mkdir(parents=True)
    (mine / "zero_stage_3" / "optimizer" / "rank0" / "0_38.tensor.swp").write_bytes(b"\0" * 3 * 2**20)
    neighbour = swap_dir(nvme, tmp_path / "runs" / "r2")
    neighbour.mkdir()
    (neighbour / "x.swp").write_bytes(b"1")
    (nvme / "datasets.tar").write_bytes(b"keep")
    said = remove_swap(nvme, run)
    assert said == f"removed the NVMe swap folder {mine} (0.00 GiB)" and not mine.exists()
    assert sorted(p.name for p in nvme.iterdir()) == ["datasets.tar", neighbour.name]
    assert (neighbour / "x.swp").read_bytes() == b"1"
    assert remove_swap(nvme, run) is None  # nothing left: nothing said
    assert remove_swap(None, run) is None


def test_a_tampered_nvme_path_cannot_turn_removal_on_other_folders(tmp_path):
    """A plan edited to point nvme_path at a folder of the user's removes only the run's name there;
    a link in its place is unlinked, its target kept."""
    precious = tmp_path / "home"
    (precious / "notes").mkdir(parents=True)
    (precious / "notes" / "a.txt").write_text("mine")
    run = tmp_path / "runs" / "notes"  # a run folder named like one of the user's folders
    assert remove_swap(precious, run) is None and (precious / "notes" / "a.txt").read_text() == "mine"
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "b.txt").write_text("kept")
    os.symlink(target, swap_dir(precious, tmp_path / "runs" / "r3"))
    said = remove_swap(precious, tmp_path / "runs" / "r3")
    assert said.startswith("removed the link") and (target / "b.txt").read_text() == "kept"
    assert not swap_dir(precious, tmp_path / "runs" / "r3").is_symlink()


def test_preflight_refuses_nvme_offload_where_async_io_cannot_be_built(tmp_path, monkeypatch):
    """Without libaio DeepSpeed's async_io op cannot be built: the launch says so and what would work,
    before minutes of loading. The builder's verdict is DeepSpeed's own (is_compatible); here it is
    made to say no, as it does on a machine without libaio's headers."""
    from deepspeed.accelerator import get_accelerator

    from zerotui.core.deepspeed import prebuild
    from zerotui.core.hardware.detect import detect
    from zerotui.core.run.preflight import preflight

    monkeypatch.setattr(prebuild, "is_built", lambda name: False)
    builder_cls = type(get_accelerator().create_op_builder("AsyncIOBuilder"))
    monkeypatch.setattr(builder_cls, "is_compatible", lambda self, verbose=False: False)
    (tmp_path / "nvme").mkdir()
    with pytest.raises(HardwareError) as err:
        preflight(_nvme_plan(tmp_path / "nvme", max_steps=1), detect(), force=True)
    assert "libaio was not found" in str(err.value) and "apt install libaio-dev" in err.value.hint
    assert "offload to cpu" in err.value.hint


#: What DeepSpeed's async I/O op prints before it aborts, as a 12 MB disk filled by a --force run printed it.
AIO_ABORT = ("python: .../deepspeed/ops/csrc/aio/py_lib/deepspeed_py_io_handle.cpp:34: bool is_valid_bytes_to_read"
             "(const char*, int64_t, int64_t): Assertion `(file_offset + num_bytes_to_read) <= num_file_bytes' failed.")


def _aborting_run(tmp_path, printed: str):
    """A supervised 'worker' that prints ``printed`` and aborts, as DeepSpeed's async I/O does; the run's
    plan swaps to NVMe and its swap folder holds a file. The run's run_finished event."""
    import json
    import subprocess
    import sys

    from run_events import events
    from worker_runs import SUPERVISOR, make_run

    nvme = tmp_path / "nvme"
    paths = make_run(tmp_path, stage=3, offload_optimizer="nvme", offload_params="nvme", nvme_path=str(nvme))
    paths.estimate.write_text(json.dumps({"nvme_bytes": 18010368}))
    swap = swap_dir(nvme, paths.root) / "zero_stage_3"
    swap.mkdir(parents=True)
    (swap / "x.swp").write_bytes(b"\0" * 4096)
    code = f"import os, sys; sys.stderr.write({printed!r} + '\\n'); sys.stderr.flush(); os.abort()"
    with open(paths.log, "ab") as log:
        subprocess.run([sys.executable, "-m", SUPERVISOR, str(paths.root), "--direct", "--", sys.executable, "-c",
                        code], stdout=log, stderr=subprocess.STDOUT, timeout=120, check=False)
    assert not swap.parent.exists()  # read before the removal, removed all the same
    (fin,) = events(paths, "run_finished")
    return paths, fin


def test_a_worker_aborted_by_a_full_swap_disk_is_told_what_filled_and_what_to_do(tmp_path):
    paths, fin = _aborting_run(tmp_path, AIO_ABORT)
    assert fin["state"] == "failed"
    reason = fin["reason"]
    assert "killed by SIGABRT" in reason and "NCCL" not in reason  # the usual guess would mislead here
    assert f"the NVMe swap folder's disk ({tmp_path / 'nvme'}) filled up" in reason
    assert "aborted reading back a swap file shorter than it had written" in reason
    assert "the plan needs about 17.2 MiB there" in reason and f"zerotui resume {paths.name}" in reason


def test_an_abort_with_room_on_the_swap_disk_keeps_the_usual_reading(tmp_path):
    _, fin = _aborting_run(tmp_path, "some other assertion failed")
    assert "NCCL's watchdog" in fin["reason"] and "filled up" not in fin["reason"]


def test_a_nearly_full_swap_disk_is_named_without_the_assertion(tmp_path, monkeypatch):
    from zerotui.core.deepspeed import nvme_swap
    from zerotui.core.hardware import disks

    log = tmp_path / "worker.log"
    log.write_text("Fatal Python error: Aborted\n")
    monkeypatch.setattr(disks, "free_bytes_at", lambda path: 3 << 20)
    said = nvme_swap.full_disk_cause(tmp_path / "nvme", tmp_path / "runs" / "r1", log, None)
    assert said.startswith(f"the NVMe swap folder's disk ({tmp_path / 'nvme'}) filled up (3.0 MiB free")
    assert "the disk had no room left" in said and "needs about" not in said
    monkeypatch.setattr(disks, "free_bytes_at", lambda path: 5 << 30)
    assert nvme_swap.full_disk_cause(tmp_path / "nvme", tmp_path / "runs" / "r1", log, None) is None


def test_a_log_that_is_a_link_is_not_followed_for_the_assertion(tmp_path, monkeypatch):
    from zerotui.core.deepspeed import nvme_swap
    from zerotui.core.hardware import disks

    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_text(AIO_ABORT)
    (tmp_path / "worker.log").symlink_to(elsewhere)
    monkeypatch.setattr(disks, "free_bytes_at", lambda path: 5 << 30)
    assert nvme_swap.full_disk_cause(tmp_path / "nvme", tmp_path / "r1", tmp_path / "worker.log", 1) is None


def _raised_in(filename: str) -> BaseException:
    """A bare AssertionError raised from code that says it is ``filename``, as DeepSpeed's swap_in_tensors
    raises one when async_pread fails."""
    namespace: dict = {}
    exec(compile("def swap_in():\n    assert False\n", filename, "exec"), namespace)
    try:
        namespace["swap_in"]()
    except AssertionError as err:
        return err
    raise AssertionError("not raised")


def test_a_failed_swap_read_names_the_swap_folder_and_its_state(tmp_path):
    from zerotui.core.run.monitor import describe_failure

    plan, run = _nvme_plan(tmp_path / "nvme"), tmp_path / "runs" / "r1"
    swapping = _raised_in("/venv/site-packages/deepspeed/runtime/swap_tensor/utils.py")
    gone = describe_failure(swapping, "training step 21", plan, None, run).reason
    assert gone.startswith("DeepSpeed could not read or write an NVMe offload swap file (AssertionError): "
                           f"the swap folder {swap_dir(tmp_path / 'nvme', run)} is gone")
    assert gone.endswith("(in training step 21); `zerotui resume r1` writes the swap folder again from the last "
                         "complete checkpoint")
    swap_dir(tmp_path / "nvme", run).mkdir(parents=True)
    assert "is there, " in describe_failure(swapping, "training step 21", plan, None, run).reason
    # The same error raised anywhere else, or in a run without NVMe offload, reads as before
    elsewhere = _raised_in("/venv/site-packages/deepspeed/runtime/engine.py")
    assert describe_failure(elsewhere, "training step 21", plan, None, run).reason == \
        "AssertionError in training step 21"  # a bare assertion: no empty ': ' after it
    host = plan.with_changes(offload_optimizer="cpu", offload_params="cpu", nvme_path=None)
    assert describe_failure(swapping, "training step 21", host, None, run).reason.startswith("AssertionError in")


def test_weights_on_nvme_running_out_of_swap_buffers_says_so_and_what_to_change(tmp_path):
    """DeepSpeed 0.19.8's parameter swapper on a GPU, second step of a 1.1B plan with its weights on NVMe
    (benchmarks/results/nvme-gpu-2026-12-05-2.json): the reason names the buffers and a plan that avoids
    them, and does not suggest a resume, which would meet the same shortage."""
    from zerotui.core.run.monitor import describe_failure

    plan, run = _nvme_plan(tmp_path / "nvme"), tmp_path / "runs" / "r1"
    short = AssertionError("Not enough buffers 0 for swapping 1")
    why = describe_failure(short, "training step 2", plan, None, run).reason
    assert why.startswith("DeepSpeed's NVMe weight swapper ran out of its buffers (offload_buffer_count, "
                          "DeepSpeed's default 5) (Not enough buffers 0 for swapping 1)")
    assert "--offload-params cpu" in why and why.endswith("(in training step 2)") and "resume" not in why
    assert "--stage3-max-reuse-distance 0" in why
    kept = describe_failure(short, "training step 2", plan.with_changes(stage3_max_reuse_distance=10**9), None, run)
    assert "this plan sets stage3_max_reuse_distance 1000000000" in kept.reason
    counted = describe_failure(short, "training step 2", plan.with_changes(offload_buffer_count=8), None, run)
    assert "ran out of its 8 buffers" in counted.reason
    host = plan.with_changes(offload_optimizer="cpu", offload_params="cpu", nvme_path=None)
    assert describe_failure(short, "training step 2", host, None, run).reason.startswith("AssertionError")


MOUNTS = """/dev/vda / ext4 rw,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0
/dev/nvme0n1p1 /mnt/nvme ext4 rw,noatime 0 0
tmpfs /mnt/nvme/scratch\\040space tmpfs rw 0 0
"""


def test_the_filesystem_holding_a_path_is_its_longest_mount():
    from zerotui.core.hardware.disks import fstype_at

    assert fstype_at("/dev/shm/zt/swap", MOUNTS) == "tmpfs"  # a folder not made yet: its mount still says
    assert fstype_at("/mnt/nvme/swap", MOUNTS) == "ext4"
    assert fstype_at("/mnt/nvme/scratch space/x", MOUNTS) == "tmpfs"  # /proc/mounts' octal escapes
    assert fstype_at("/mnt/nvmex", MOUNTS) == "ext4"  # "/", not /mnt/nvme: a prefix is not a parent
    assert fstype_at("/home/u", "") is None


def test_swap_files_in_ram_are_counted_as_host_ram(tmp_path, monkeypatch):
    """DeepSpeed swaps to a tmpfs folder without complaint (trained on the CPU to /dev/shm): the swap files
    then take host RAM, which the budget counts and says."""
    from zerotui.core.estimate.budget import estimate
    from zerotui.core.hardware import disks
    from zerotui.core.hardware.types import Hardware

    plan = _nvme_plan(tmp_path / "nvme")
    hw = Hardware(ram_total_bytes=64 << 30, ram_available_bytes=64 << 30)
    monkeypatch.setattr(disks, "fstype_at", lambda path, mounts_text=None: "ext4")
    on_disk = estimate(plan, hw)
    monkeypatch.setattr(disks, "fstype_at", lambda path, mounts_text=None: "tmpfs")
    in_ram = estimate(plan, hw)
    assert in_ram.breakdown["cpu"]["NVMe swap files (in RAM: tmpfs)"] == in_ram.nvme_bytes
    assert in_ram.cpu_bytes == on_disk.cpu_bytes + in_ram.nvme_bytes
    assert any("the NVMe folder is in RAM (tmpfs)" in w for w in in_ram.warnings)
    assert not any("in RAM (" in w for w in on_disk.warnings)
    stated = Hardware(ram_total_bytes=64 << 30, source="stated")  # planning for another machine
    assert "NVMe swap files (in RAM: tmpfs)" not in estimate(plan, stated).breakdown["cpu"]
