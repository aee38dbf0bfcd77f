"""The locked-memory limit and what NVMe offload locks (core/deepspeed/memlock.py, core/estimate/host.py)."""
from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from zerotui.core.deepspeed import memlock
from zerotui.core.deepspeed.config import DS_SUB_GROUP_SIZE, NVME_SUB_GROUP_SIZE, build_ds_config
from zerotui.core.estimate.budget import estimate
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.model.spec import spec_for_plan
from zerotui.core.plan.schema import Plan

GIB, MIB = 1 << 30, 1 << 20


def status_file(tmp_path, cap_eff: str):
    f = tmp_path / "status"
    f.write_text(f"Name:\tpython\nCapInh:\t0000000000000000\nCapEff:\t{cap_eff}\nCapBnd:\t000001ffffffffff\n")
    return f


def test_cap_ipc_lock_is_read_from_the_effective_set(tmp_path):
    assert memlock.holds_ipc_lock(status_file(tmp_path, "000001fffeffffff"))
    assert not memlock.holds_ipc_lock(status_file(tmp_path, "000001fffeffbfff"))  # bit 14 dropped (setpriv)
    assert not memlock.holds_ipc_lock(status_file(tmp_path, "0000000000000000"))  # an ordinary user
    assert not memlock.holds_ipc_lock(tmp_path / "missing")


@pytest.fixture
def limits(monkeypatch):
    def set_limits(soft, hard, cap=False):
        monkeypatch.setattr(memlock.resource, "getrlimit", lambda which: (soft, hard))
        monkeypatch.setattr(memlock, "holds_ipc_lock", lambda: cap)
    return set_limits


def test_a_plan_locking_more_than_the_hard_limit_is_named_with_both_figures(limits):
    limits(64 << 10, 8 * MIB)
    said = memlock.limit_problem(16 * MIB)
    assert said and "locks 16.0 MiB of host RAM in each process" in said and "only 8.0 MiB (ulimit -l)" in said
    assert memlock.limit_problem(8 * MIB) is None  # the soft limit is raised to the hard one by the worker
    assert memlock.limit_problem(0) is None


def test_no_limit_where_the_hard_limit_is_unlimited_or_the_process_may_lock_anything(limits):
    limits(8 * MIB, resource.RLIM_INFINITY)
    assert memlock.limit_problem(100 * GIB) is None
    limits(8 * MIB, 8 * MIB, cap=True)
    assert memlock.limit_problem(100 * GIB) is None


def test_the_worker_raises_its_soft_limit_to_the_hard_one():
    code = ("import resource\nfrom zerotui.core.deepspeed.memlock import raise_soft_limit\n"
            "_, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)\n"
            "resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 << 10, hard))\n"
            "print(raise_soft_limit())\nprint(raise_soft_limit())\n"
            "soft, hard2 = resource.getrlimit(resource.RLIMIT_MEMLOCK)\nprint(soft == hard == hard2)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("locked-memory limit raised from 64.0 KiB to ")
    assert out[1:] == ["None", "True"]  # said once; nothing left to raise


def test_deepspeeds_mlock_failure_in_the_log_becomes_the_reason(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("zerotui worker rank 0 (pid 1)\nmlock failed to allocate 4002816 bytes with error no 12 msg Cannot "
                   "allocate memory\npython: deepspeed_pin_tensor.cpp:48: Assertion `nullptr != pinned_buffer' failed.\n")
    said = memlock.mlock_failure(log, locked=16_011_264)
    assert said and "could not lock a 3.8 MiB swap buffer" in said and "ulimit -l" in said
    assert "the plan locks about 15.3 MiB in each process" in said and "--offload-optimizer cpu" in said
    log.write_text("killed by SIGABRT\n")
    assert memlock.mlock_failure(log) is None
    assert memlock.mlock_failure(tmp_path / "gone.log") is None


def gpu_box() -> Hardware:
    gpu = GpuInfo(index=0, name="RTX 4090", total_bytes=24 * GIB, free_bytes=24 * GIB, compute_capability=(8, 9),
                  bf16=True)
    return Hardware(gpus=[gpu], ram_total_bytes=256 * GIB, ram_available_bytes=256 * GIB)


def nvme_plan(tmp_path, **changes) -> Plan:
    return Plan(model="llama-2-7b", stage=3, offload_optimizer="nvme", nvme_path=tmp_path, grad_ckpt=True,
                **changes)


def test_the_optimizers_swap_buffers_are_counted_as_deepspeed_locks_them(tmp_path):
    # unpinned: pinned, this 7B's host peak is the start-up moment its gradient partition is pinned
    # (test_memory.py), before the first step's buffers exist
    b = estimate(nvme_plan(tmp_path, pin_memory=False), gpu_box())
    # zerotui's NVMe sub-group (1e8): four fp32 buffers of it, exact (DeepSpeed's own mlock()ed allocation,
    # not PyTorch's power-of-two pinned allocator), then the gradient buffer and CPU Adam's first-step moments
    cpu = b.breakdown["cpu"]
    assert b.locked_bytes == cpu["NVMe swap buffers (page-locked)"] == 4 * 4 * NVME_SUB_GROUP_SIZE
    assert cpu["fp32 gradient buffer (largest sub-group)"] == 4 * NVME_SUB_GROUP_SIZE
    assert cpu["Adam's first-step moments (largest sub-group)"] == 8 * NVME_SUB_GROUP_SIZE
    big = estimate(nvme_plan(tmp_path, sub_group_size=DS_SUB_GROUP_SIZE, pin_memory=False), gpu_box())
    assert big.locked_bytes == 16 * DS_SUB_GROUP_SIZE  # 14.9 GiB, where 4 x 2^32 would have been rounded
    # 16 locked + 4 gradient buffer + 8 moments + 2 for the step's 16-bit cast (host.step_cast) a element
    assert big.cpu_bytes - b.cpu_bytes == 30 * (DS_SUB_GROUP_SIZE - NVME_SUB_GROUP_SIZE)


def test_weights_on_nvme_add_their_buffers_the_write_back_buffer_and_the_host_copy(tmp_path):
    plan = nvme_plan(tmp_path, offload_params="nvme")
    b = estimate(plan, gpu_box())
    weights = b.breakdown["cpu"]["NVMe weight buffers (page-locked)"]
    cfg = build_ds_config(plan, 1, spec_for_plan(plan))["zero_optimization"]["offload_param"]
    assert cfg["buffer_size"] == 32000 * 4096  # the embedding: DeepSpeed asserts every weight fits a buffer
    aligned = -(-2 * NVME_SUB_GROUP_SIZE // 1024) * 1024  # DeepSpeed's async I/O works in 1 KiB units
    assert weights == cfg["buffer_count"] * cfg["buffer_size"] * 2 + aligned
    assert b.locked_bytes == 16 * NVME_SUB_GROUP_SIZE + weights
    # DeepSpeed also keeps up to max_in_cpu (1e9) trainable 16-bit weights in one pinned host buffer
    assert b.breakdown["cpu"]["16-bit weights in host RAM (pinned, max_in_cpu)"] == 1 << 31  # 2e9 B, pinned
    assert estimate(plan.with_changes(offload_optimizer="cpu", offload_params="cpu"), gpu_box()).locked_bytes == 0


def test_nvme_plans_get_a_smaller_sub_group_and_weights_there_no_reuse_unless_the_plan_names_them(tmp_path):
    zero = build_ds_config(nvme_plan(tmp_path), 1)["zero_optimization"]
    assert zero["sub_group_size"] == NVME_SUB_GROUP_SIZE and zero["stage3_max_reuse_distance"] == 10**9
    weights = build_ds_config(nvme_plan(tmp_path, offload_params="nvme"), 1)["zero_optimization"]
    assert weights["stage3_max_reuse_distance"] == 0  # each weight gives its swap buffer back after use
    named = nvme_plan(tmp_path, offload_params="nvme", stage3_max_reuse_distance=5)
    assert build_ds_config(named, 1)["zero_optimization"]["stage3_max_reuse_distance"] == 5
    assert build_ds_config(nvme_plan(tmp_path, sub_group_size=12345), 1)["zero_optimization"]["sub_group_size"] == 12345
    host = Plan(model="llama-2-7b", stage=3, offload_optimizer="cpu")
    assert build_ds_config(host, 1)["zero_optimization"]["sub_group_size"] == DS_SUB_GROUP_SIZE
