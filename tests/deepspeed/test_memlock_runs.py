"""NVMe offload under an ordinary account's locked-memory limit (RLIMIT_MEMLOCK), with real DeepSpeed on
the CPU. DeepSpeed mlock()s its swap buffers; past the limit its allocation fails an assertion and the
worker dies of SIGABRT inside deepspeed.initialize. Root holds CAP_IPC_LOCK, which lifts the limit, so as
root each run drops it with setpriv: the processes are then limited as any user is."""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zerotui.core.run.folder import RunPaths

MIB = 1 << 20


def _prefix() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:  # util-linux; without it root's capability hides the limit
        pytest.fail("setpriv (util-linux) is needed to drop CAP_IPC_LOCK for this test as root")
    return ["setpriv", "--bounding-set", "-ipc_lock", "--inh-caps", "-ipc_lock"]


def _train(tmp_path: Path, soft: int, hard: int, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    """``zerotui train`` (tiny model, the optimizer on NVMe) with RLIMIT_MEMLOCK set to (soft, hard)."""
    nvme, runs = tmp_path / "nvme", tmp_path / "runs"
    nvme.mkdir(exist_ok=True)

    def limit() -> None:  # lowering a limit needs no privilege
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))

    argv = [*_prefix(), sys.executable, "-m", "zerotui.cli.main", "train", "--model", "tiny", "--data", "sample",
            "--stage", "3", "--offload-optimizer", "nvme", "--nvme-path", str(nvme), "--micro-batch", "2",
            "--seq-len", "64", "--max-steps", "2", "--log-interval", "1", "--save-interval", "0",
            "--save-minutes", "0", "--eval-fraction", "0", "--no-save-final", "--max-samples", "40",
            "--runs-dir", str(runs), "--foreground", *extra]
    r = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=900, preexec_fn=limit)
    return r, runs


@pytest.fixture
def hard_8mib() -> int:
    """The hard limit these tests give: systemd's default for a user, or this machine's if lower."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    hard = 8 * MIB if hard == resource.RLIM_INFINITY else min(hard, 8 * MIB)
    if hard < 4 * MIB:
        pytest.fail(f"this machine's hard RLIMIT_MEMLOCK ({hard} B) is below what the tests' small plan locks")
    return hard


def test_a_low_soft_limit_is_raised_by_the_worker_and_the_run_trains(tmp_path, hard_8mib):
    # 200,000-element sub-groups: four fp32 swap buffers of ~0.8 MB, within the hard limit, far above 64 KiB.
    # Without raise_soft_limit the same run died of SIGABRT (checked by hand on 2026-12-05).
    r, runs = _train(tmp_path, 64 << 10, hard_8mib, "--sub-group-size", "200000")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    (paths,) = [RunPaths(p) for p in runs.iterdir()]
    said = [json.loads(line).get("message", "") for line in paths.events.read_text().splitlines()]
    assert any(m.startswith("locked-memory limit raised from 64.0 KiB to ") for m in said), said
    assert json.loads(paths.estimate.read_text())["locked_bytes"] < hard_8mib


def test_the_launch_refuses_a_plan_that_locks_more_than_the_hard_limit(tmp_path, hard_8mib):
    # The tiny model in one sub-group: four fp32 buffers of its 1.0M weights, 15.3 MiB
    r, runs = _train(tmp_path, hard_8mib, hard_8mib)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-3000:]
    assert "NVMe offload locks 15.3 MiB of host RAM in each process" in r.stderr
    assert "ulimit -l" in r.stderr and "memlock unlimited" in r.stderr and "--offload-optimizer cpu" in r.stderr
    assert not runs.exists() or not any(runs.iterdir())  # refused before anything was written


def test_a_forced_run_that_cannot_lock_its_buffers_ends_naming_the_limit(tmp_path, hard_8mib):
    r, runs = _train(tmp_path, hard_8mib, hard_8mib, "--force")
    assert r.returncode == 1
    (paths,) = [RunPaths(p) for p in runs.iterdir()]
    status = json.loads(paths.status.read_text())
    assert status["state"] == "failed"
    reason = status["reason"]
    assert "could not lock a 3.8 MiB swap buffer for NVMe offload" in reason, reason
    assert "the plan locks about 15.3 MiB in each process" in reason and "memlock unlimited" in reason
    assert "NCCL" not in reason  # the SIGABRT's usual reading, wrong here
    assert not any((tmp_path / "nvme").iterdir())  # the swap folder went as usual
