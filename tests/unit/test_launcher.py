"""launcher_argv / launcher_env: the argv DeepSpeed's own launcher parses, never a shell string, and the
environment with NVLink multicast off."""
from __future__ import annotations

import socket
import sys

import pytest

from zerotui.core.errors import PlanError
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.run.launcher import NO_MULTICAST_ENV, deepspeed_env_lines, launcher_argv, launcher_env
from zerotui.core.train.distributed import free_port
from zerotui.core.plan.schema import Plan

import deepspeed.launcher.runner as runner  # noqa: E402


def gpus(n: int) -> Hardware:
    return Hardware(gpus=[GpuInfo(i, "H200", 141 << 30, 141 << 30, (9, 0), True) for i in range(n)])


def parsed(argv: list[str]):
    """What the `deepspeed` command makes of our arguments (its own argparse)."""
    assert argv[1:3] == ["-m", "deepspeed.launcher.runner"]
    return runner.parse_args(argv[3:])


def test_one_process_runs_the_worker_directly(tmp_path):
    argv = launcher_argv(Plan(), tmp_path / "run", gpus(1), python="/venv/bin/python")
    assert argv == ["/venv/bin/python", "-m", "zerotui.core.run.worker", str(tmp_path / "run")]
    assert launcher_argv(Plan(), tmp_path, Hardware())[0] == sys.executable  # CPU only: one process too


def test_all_detected_gpus_use_the_deepspeed_launcher(tmp_path):
    argv = launcher_argv(Plan(), tmp_path, gpus(4))
    assert all(isinstance(a, str) for a in argv)
    args = parsed(argv)
    assert args.num_gpus == 4 and args.include == "" and args.num_nodes == -1
    assert args.module and args.no_local_rank
    assert args.user_script == "zerotui.core.run.worker" and args.user_args == [str(tmp_path)]
    assert 1024 <= args.master_port <= 65535


def test_gpu_count_and_explicit_port(tmp_path):
    args = parsed(launcher_argv(Plan(gpus=2, master_port=29555), tmp_path, gpus(8)))
    assert args.num_gpus == 2 and args.master_port == 29555


def test_cpu_machine_with_two_processes(tmp_path):
    # No GPU: DeepSpeed's launcher still starts 2 ranks (gloo) when asked for 2.
    args = parsed(launcher_argv(Plan(gpus=2), tmp_path, Hardware()))
    assert args.num_gpus == 2


def test_chosen_gpu_indices_go_through_include(tmp_path):
    args = parsed(launcher_argv(Plan(gpu_ids=[1, 3]), tmp_path, gpus(4)))
    assert args.include == "localhost:1,3" and args.num_gpus == -1  # the runner refuses both together
    # One chosen GPU is still pinned by the launcher (a plain process would see every GPU).
    assert parsed(launcher_argv(Plan(gpu_ids=[2]), tmp_path, gpus(4))).include == "localhost:2"


def test_several_nodes_use_the_hostfile(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# cluster\nnode-a slots=8\nnode-b slots=8  # second\n\n")
    args = parsed(launcher_argv(Plan(nodes=2, hostfile=hostfile, gpus=8), tmp_path, gpus(8)))
    assert args.hostfile == str(hostfile) and args.num_nodes == 2 and args.num_gpus == 8
    args = parsed(launcher_argv(Plan(nodes=2, hostfile=hostfile, gpu_ids=[0, 1]), tmp_path, gpus(8)))
    assert args.include == "node-a:0,1@node-b:0,1"


def test_hostfile_problems_are_plan_errors(tmp_path):
    short = tmp_path / "hosts"
    short.write_text("node-a slots=8\n")
    with pytest.raises(PlanError, match="lists 1 host"):
        launcher_argv(Plan(nodes=2, hostfile=short, gpu_ids=[0]), tmp_path, gpus(8))
    with pytest.raises(PlanError, match="missing: no such file"):
        launcher_argv(Plan(nodes=2, hostfile=tmp_path / "missing", gpu_ids=[0]), tmp_path, gpus(8))


@pytest.mark.parametrize("text, said", [
    ("garbage line here\n", "line 1: 'garbage line here' is not 'hostname slots=N'"),
    ("node-a slots=8\nnode-b 8\n", "line 2: 'node-b 8' is not 'hostname slots=N'"),
    ("node-a slots=8\nnode-a slots=4\n", "line 2: 'node-a' is listed twice"),
    ("node-a slots=8\n", "lists 1 host(s) but nodes=2"),
    ("# nobody\n\n", "lists no hosts"),
    (None, "is a FIFO"),
])
def test_a_hostfile_deepspeeds_runner_would_refuse_is_refused_before_the_launch(tmp_path, text, said):
    """What DeepSpeed's runner fails on (its reason only in worker.log, after a run folder was made) is
    refused by the launch's checks; a FIFO is refused unread, never waited on."""
    import os

    from zerotui.core.run.launcher import hostfile_problem

    hosts = tmp_path / "hosts"
    if text is None:
        os.mkfifo(hosts)
    else:
        hosts.write_text(text)
    with pytest.raises(PlanError) as err:
        hostfile_problem(Plan(nodes=2, hostfile=hosts))
    assert said in err.value.message and str(hosts) in err.value.message
    hosts.unlink()
    hosts.write_text("node-a slots=8  # the big box\n# spare\nnode-b slots=8\n")
    hostfile_problem(Plan(nodes=2, hostfile=hosts))  # what the runner accepts is accepted


def test_free_port_is_bindable():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # nobody holds it: binding works (it would raise EADDRINUSE)
        assert s.getsockname()[1] == port and 0 < port < 65536


def test_env_forces_multicast_off_and_keeps_the_rest():
    env = launcher_env({"PATH": "/bin", "NCCL_NVLS_ENABLE": "1", "DEEPSPEED_TIMEOUT": "5"})
    assert env["PATH"] == "/bin"
    for k, v in NO_MULTICAST_ENV.items():
        assert env[k] == v
    assert env["NCCL_NVLS_ENABLE"] == "0"  # forced even when the caller had it on
    assert env["DEEPSPEED_TIMEOUT"] == "5"  # the user's own timeout wins
    # 10 min: a hung peer ends the run in minutes (why this value: core/run/launcher.py, docs/multi_gpu.md).
    assert launcher_env({})["DEEPSPEED_TIMEOUT"] == "10" and launcher_env({})["PYTHONUNBUFFERED"] == "1"


def test_env_plan_form_starts_from_this_process(monkeypatch):
    monkeypatch.setenv("ZEROTUI_PROBE", "yes")
    env = launcher_env(Plan(), gpus(1))  # the form core/run/start.py uses
    assert env["ZEROTUI_PROBE"] == "yes" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"


def test_deepspeed_env_file_lines():
    lines = deepspeed_env_lines()
    assert "NVSHMEM_DISABLE_NVLS=1" in lines and all("=" in ln for ln in lines)


def test_a_users_allocator_setting_travels_to_the_other_nodes():
    """DeepSpeed's multi-node runner does not forward PYTORCH_* variables: the user's allocator choice goes
    into the .deepspeed_env lines, so every node's workers choose as this node's estimate did."""
    env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False", "HOME": "/root"}
    lines = deepspeed_env_lines(env)
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False" in lines
    assert not any(ln.startswith("HOME=") for ln in lines)
    assert not any("ALLOC_CONF" in ln for ln in deepspeed_env_lines({"HOME": "/root"}))
