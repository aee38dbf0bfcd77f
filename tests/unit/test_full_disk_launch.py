"""`zerotui train` and `zerotui resume` on a runs folder whose disk is full or read-only, for real: one
line naming the folder and the problem, exit 1, no traceback, and nothing added or half-written.

Root writes through chmod, so the disks are real ones: a small tmpfs filled to ENOSPC, and a read-only
bind mount (EROFS stops root too), each in a private mount namespace (``unshare --mount``, see
tests/helpers/storage_fault.py). A disk that fills while the launch writes is a file-size limit
(RLIMIT_FSIZE with SIGXFSZ ignored: the write fails with EFBIG), which needs no privilege."""
from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys

import pytest
from places import TESTS
from test_cli_runs import fake_finished_run


def _namespace_prefix() -> list[str] | None:
    """How this machine gives us a private mount namespace: as root, or through a user namespace."""
    for prefix in (["unshare", "--mount"], ["unshare", "--mount", "--map-root-user"]):
        try:
            r = subprocess.run([*prefix, "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", "/mnt"],
                               check=False, capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if r.returncode == 0:
            return prefix
    return None


PREFIX = _namespace_prefix()
needs_mounts = pytest.mark.skipif(PREFIX is None, reason="no mount namespace here (unshare --mount needs root "
                                                         "or unprivileged user namespaces)")


def fault(mode: str, folder, *command: str, seed=None) -> dict:
    argv = [*PREFIX, sys.executable, str(TESTS / "helpers" / "storage_fault.py"), f"--{mode}", str(folder)]
    argv += ["--seed", str(seed)] if seed else []
    r = subprocess.run([*argv, "--", *command], check=False, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_one_line(out: dict, *needles: str) -> None:
    assert out["rc"] == 1, out["stderr"]
    lines = out["stderr"].splitlines()
    assert len(lines) == 1 and "Traceback" not in out["stderr"], out["stderr"]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert out["after"] == out["before"]  # no run folder, no temp file, no changed byte


@needs_mounts
@pytest.mark.parametrize("mode,problem", [("full", "the disk is full"), ("nearly-full", "the disk is full"),
                                          ("read-only", "the file system is read-only")])
def test_train_on_a_full_or_read_only_runs_folder(tmp_path, mode, problem):
    disk = tmp_path / "disk"
    disk.mkdir()
    out = fault(mode, disk, "train", "tiny-cpu-demo", "--runs-dir", str(disk))
    assert_one_line(out, f"the runs folder {disk} cannot be written", problem, "--runs-dir")
    assert out["stdout"] == ""


@needs_mounts
@pytest.mark.parametrize("mode,problem", [("full", "the disk is full"), ("read-only", "the file system is read-only")])
def test_resume_on_a_full_or_read_only_run_folder(tmp_path, mode, problem):
    seed = tmp_path / "seed"
    paths = fake_finished_run(seed, "r", "stopped", step=5)
    disk = tmp_path / "disk"
    disk.mkdir()
    out = fault(mode, disk, "resume", paths.name, "--runs-dir", str(disk), seed=seed)
    assert_one_line(out, f"the run folder {disk / paths.name} cannot be written", problem,
                    f"`zerotui resume {paths.name}` again")
    assert f"{paths.name}/status.json" in out["before"]


def test_a_write_failing_during_the_launch_leaves_no_run_folder(tmp_path):
    runs = tmp_path / "runs"

    def limit() -> None:  # the free-space probe (512 bytes) fits, plan.yaml (~1.7 KB) does not
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", "tiny-cpu-demo", "--runs-dir", str(runs)],
                       check=False, capture_output=True, text=True, timeout=300, preexec_fn=limit)
    if r.returncode == 0:  # launched after all: do not leave its worker running past the test
        subprocess.run([sys.executable, "-m", "zerotui.cli.main", "stop", "--now", "--wait", "--runs-dir", str(runs)],
                       check=False, capture_output=True, timeout=300)
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert f"the runs folder {runs} cannot be written: a file would pass the size limit" in r.stderr
    assert list(runs.iterdir()) == []  # the run folder it had made is gone again
