"""The command that starts a run's worker: an argv list (never a shell string) and its environment.

One process: ``python -m zerotui.core.run.worker RUN_DIR``. Several GPUs, several nodes, or chosen GPU
indices: DeepSpeed's own launcher (``deepspeed.launcher.runner``, the module behind the ``deepspeed``
command), which starts one worker per GPU with RANK/LOCAL_RANK/WORLD_SIZE set; nothing home-made
replaces it.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping, Optional

from zerotui.core.errors import PlanError
from zerotui.core.hardware.types import Hardware
from zerotui.core.plan import allocator
from zerotui.core.plan.schema import Plan
from zerotui.core.train.distributed import DEFAULT_TIMEOUT_MINUTES, free_port

WORKER_MODULE = "zerotui.core.run.worker"
DEEPSPEED_RUNNER_MODULE = "deepspeed.launcher.runner"
SUPERVISOR_MODULE = "zerotui.core.run.supervisor"

#: NVLink multicast (NVLS) must stay off on the shared H200 machines this project is measured on (their
#: operators require it; docs/multi_gpu.md): forced in every environment zerotui builds, whatever the
#: caller's environment says.
NO_MULTICAST_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def uses_launcher(plan: Plan, hardware: Optional[Hardware]) -> bool:
    """The DeepSpeed launcher is needed for several processes, several nodes, or to pin chosen GPU
    indices (it sets CUDA_VISIBLE_DEVICES per rank; a plain process would see every GPU)."""
    return launcher_needed(plan, (hardware or Hardware()).gpu_count)


def launcher_needed(plan: Plan, gpu_count: int) -> bool:
    """``uses_launcher`` on a machine with ``gpu_count`` GPUs."""
    return plan.world_size(gpu_count) > 1 or plan.nodes > 1 or plan.gpu_ids is not None


def _hostfile_hosts(hostfile: Path) -> list[str]:
    """Host names in a DeepSpeed hostfile ('hostname slots=N' per line, '#' comments), read as DeepSpeed's
    runner reads it (``fetch_hostfile``: any other line is "a bad entry" and the launch fails, said only
    in worker.log); refused here, before a run folder exists."""
    import re

    from zerotui.core.safe_read import describe, read_text

    hint = "give --hostfile FILE with one 'hostname slots=N' line per node"
    try:  # a FIFO or /dev/zero is refused unread; a huge file by its size
        lines = read_text(hostfile, 1 << 20).splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise PlanError(f"hostfile {hostfile}: {describe(err)}", hint) from None
    hosts = []
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if not re.match(r"\S+\s+slots=\d+", line):  # the runner's own pattern (re.search with ^)
            raise PlanError(f"hostfile {hostfile}, line {n}: {line[:60]!r} is not 'hostname slots=N'", hint)
        if line.split()[0] in hosts:
            raise PlanError(f"hostfile {hostfile}, line {n}: {line.split()[0]!r} is listed twice", hint)
        hosts.append(line.split()[0])
    if not hosts:
        raise PlanError(f"hostfile {hostfile}: lists no hosts", "one 'hostname slots=N' line per node")
    return hosts


def hostfile_problem(plan: Plan) -> None:
    """PlanError when a several-node plan's hostfile cannot be read as DeepSpeed reads it, or names fewer
    hosts than the plan's nodes."""
    if plan.nodes > 1 and plan.hostfile is not None:
        hosts = _hostfile_hosts(plan.hostfile)
        if len(hosts) < plan.nodes:
            raise PlanError(f"hostfile {plan.hostfile} lists {len(hosts)} host(s) but nodes={plan.nodes}",
                            f"add hosts to the hostfile or use --nodes {len(hosts)}")


def deepspeed_args(plan: Plan, run_dir: Path | str, hardware: Optional[Hardware],
                   master_port: Optional[int] = None) -> list[str]:
    """The arguments of the ``deepspeed`` command (without the program itself) for the Plan."""
    hardware = hardware or Hardware()  # unknown hardware: the plan's own counts, else one process
    port = plan.master_port or master_port or free_port()
    args: list[str] = ["--hostfile", str(plan.hostfile)] if plan.nodes > 1 else []
    if plan.gpu_ids is not None:
        # --include cannot be combined with --num_nodes / --num_gpus (runner.py refuses it), so the
        # chosen slots are named on every host: "localhost:0,1" or "node1:0,1@node2:0,1".
        hosts = _hostfile_hosts(plan.hostfile) if plan.nodes > 1 else ["localhost"]
        if len(hosts) < plan.nodes:
            raise PlanError(f"hostfile {plan.hostfile} lists {len(hosts)} host(s) but nodes={plan.nodes}",
                            f"add hosts to the hostfile or use --nodes {len(hosts)}")
        hosts = hosts[: plan.nodes]
        slots = ",".join(str(i) for i in plan.gpu_ids)
        args += ["--include", "@".join(f"{h}:{slots}" for h in hosts)]
    else:
        if plan.nodes > 1:
            args += ["--num_nodes", str(plan.nodes)]
        args += ["--num_gpus", str(plan.gpus_per_node(hardware.gpu_count))]
    args += ["--master_port", str(port),
             # The worker reads LOCAL_RANK from the environment, not a --local_rank argument.
             "--no_local_rank",
             "--module", WORKER_MODULE, str(run_dir)]
    return args


def launcher_argv(plan: Plan, run_dir: Path | str, hardware: Optional[Hardware],
                  python: str = sys.executable) -> list[str]:
    """argv that starts the worker for ``run_dir`` (see the module docstring)."""
    if not uses_launcher(plan, hardware):
        return [python, "-m", WORKER_MODULE, str(run_dir)]
    # `python -m deepspeed.launcher.runner` is exactly what the `deepspeed` script runs, with the same
    # interpreter as zerotui (a `deepspeed` found first on PATH could belong to another environment).
    return [python, "-m", DEEPSPEED_RUNNER_MODULE, *deepspeed_args(plan, run_dir, hardware)]


def worker_argv(plan: Plan, run_dir: Path | str, hardware: Optional[Hardware], python: str = sys.executable,
                resume: bool = False) -> list[str]:
    """What ``run.start`` starts, detached: zerotui's supervisor (``run.supervisor``, the one writer of
    ``run_finished``) with the worker (one process) or DeepSpeed's launcher (several) as its child."""
    argv = launcher_argv(plan, run_dir, hardware, python=python)
    if resume:
        argv.append("--resume")  # the worker's own option: after RUN_DIR, passed on by the launcher
    if not uses_launcher(plan, hardware):
        return [python, "-m", SUPERVISOR_MODULE, str(run_dir), "--direct", "--", *argv]
    local = plan.gpus_per_node((hardware or Hardware()).gpu_count)
    return [python, "-m", SUPERVISOR_MODULE, str(run_dir), "--local-ranks", str(local), "--", *argv]


def gpu_choice_problem(plan: Plan, hardware: Optional[Hardware]) -> Optional[tuple[str, str, str]]:
    """(field, message, hint) when the plan asks for GPUs this machine does not have, else None.

    DeepSpeed's launcher would fail on it only after start-up (``--include localhost:5`` on a 2-GPU
    machine), or worse, start ranks on devices that do not exist (``--num_gpus 4`` takes slots 0..3 as
    given, deepspeed/launcher/runner.py). On a machine without GPUs ``gpus: N`` means N CPU processes
    (gloo), which is how CI tests several ranks; GPU indices mean nothing there."""
    count = (hardware or Hardware()).gpu_count
    if plan.gpu_ids is not None:
        if count == 0:
            return ("gpu_ids", f"gpu_ids {_ids(plan.gpu_ids)}: no GPU was detected on this machine",
                    "leave gpu_ids empty (--gpus N runs N CPU processes here), or launch on the GPU machine")
        bad = [i for i in plan.gpu_ids if i >= count]
        if bad:
            return ("gpu_ids", f"gpu_ids {_ids(plan.gpu_ids)}: this machine has GPU(s) 0-{count - 1}, "
                    f"not {_ids(bad)}", f"choose indices below {count} (`zerotui doctor` lists the GPUs)")
    elif plan.gpus is not None and count and plan.gpus > count:
        return ("gpus", f"gpus {plan.gpus}: this machine has {count} GPU(s)",
                f"use --gpus {count} or fewer, or leave it empty for every GPU")
    return None


def _ids(ids: list[int]) -> str:
    return ",".join(str(i) for i in ids)


def launcher_env(base_env: Optional[Mapping[str, str]] | Plan = None,
                 hardware: Optional[Hardware] = None) -> dict[str, str]:
    """The environment for the worker (or the launcher): ``base_env`` (default: this process's) with
    NVLink multicast forced off, a process-group timeout, and unbuffered Python output so worker.log
    shows tracebacks at once.

    Also callable as ``launcher_env(plan, hardware)`` (core/run/start.py does): nothing in the environment
    depends on the plan today (GPU choice goes through the launcher's --include), so that form starts
    from this process's environment.

    The single-node launcher passes this environment on to every rank. Across nodes DeepSpeed's pdsh
    runner forwards only NCCL*/PYTHON*/UCX* variables, so the two non-NCCL switches must also be in
    ``~/.deepspeed_env`` on multi-node set-ups (see ``deepspeed_env_lines``).
    """
    if isinstance(base_env, Plan):
        base_env = None
    env = dict(os.environ if base_env is None else base_env)
    env.update(NO_MULTICAST_ENV)
    env.setdefault("DEEPSPEED_TIMEOUT", DEFAULT_TIMEOUT_MINUTES)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def deepspeed_env_lines(env: Optional[Mapping[str, str]] = None) -> list[str]:
    """``NAME=value`` lines for a ``.deepspeed_env`` file, which DeepSpeed's multi-node runner exports on
    every node (runner.py, DEEPSPEED_ENVIRONMENT_NAME). A PyTorch allocator setting of the user's (``env``,
    this process's environment when None) goes too: the other nodes' workers must make the same choice
    as this node's estimate (core/plan/allocator.py)."""
    user = os.environ if env is None else env
    env = launcher_env(env or {})
    names = [*NO_MULTICAST_ENV, "DEEPSPEED_TIMEOUT"]
    return [f"{n}={env[n]}" for n in names] + [f"{n}={user[n]}" for n in allocator.USER_ENVS if n in user]
