"""`zerotui export PRESET|PLAN.yaml -o DIR [PLAN OPTIONS]`: ds_config.json, plan.yaml and launch.sh for the
plain ``deepspeed`` command, with DIR as the run directory of zerotui's worker."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import time
from pathlib import Path

from zerotui.cli.plan_options import add_plan_options, plan_from_args
from zerotui.core.errors import PlanError, RunError

#: DeepSpeed's own default rendezvous port (launcher/constants.py TORCH_DISTRIBUTED_DEFAULT_PORT).
DEFAULT_PORT = 29500
FILES = ("ds_config.json", "plan.yaml", "launch.sh")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="PRESET|PLAN.yaml",
                        help="a preset name or a plan file (options below override it)")
    parser.add_argument("-o", "--out", required=True, type=Path, metavar="DIR",
                        help="folder to write ds_config.json, plan.yaml and launch.sh into")
    parser.add_argument("--force", action="store_true", help="replace those files if they exist")
    add_plan_options(parser)


def _detected_gpus(plan) -> tuple[int, str]:
    """GPUs to size the world with, and a note saying where the number came from."""
    if plan.gpu_ids is not None or plan.gpus is not None:
        return 0, ""
    try:
        from zerotui.core.hardware import detect
    except ImportError:
        return 0, "no hardware detection available: sized for 1 process per node (use --gpus N)"
    n = detect(probe_disks=False).gpu_count
    return n, f"sized for the {n} GPU(s) detected here (use --gpus N for another machine)"


def _model_spec(plan):
    """The model's shape for bucket sizes, or None (DeepSpeed's defaults) with a note why."""
    try:
        from zerotui.core.models import spec_for_plan
    except ImportError:
        return None, "the model table is not available: DeepSpeed's default bucket sizes were written"
    from zerotui.core.errors import ModelError

    try:
        return spec_for_plan(plan), ""
    except ModelError as err:
        return None, f"model not readable here ({err.message}): DeepSpeed's default bucket sizes were written"


def launch_script(out: Path, deepspeed_argv: list[str], port: int, per_node: int, world: int, source: str,
                  nodes: int = 1) -> str:
    quoted = []
    for token in deepspeed_argv:
        # The port stays changeable at launch time: MASTER_PORT=29600 ./launch.sh
        quoted.append(f'"${{MASTER_PORT:-{port}}}"' if token == "@PORT@" else shlex.quote(token))
    from zerotui.core.launcher import DEFAULT_TIMEOUT_MINUTES, NO_MULTICAST_ENV, deepspeed_env_lines

    env_lines = [f"export {k}={shlex.quote(v)}" for k, v in NO_MULTICAST_ENV.items()]
    cfg = shlex.quote(str(out / "ds_config.json"))
    multi_node = [] if nodes <= 1 else [
        "# Several nodes: DeepSpeed's runner forwards only NCCL*/PYTHON*/UCX* variables to the other nodes;",
        "# put these lines into ~/.deepspeed_env on this node so every rank gets them:",
        *(f"#   {line}" for line in deepspeed_env_lines()),
    ]
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# Written by `zerotui export` on {time.strftime('%Y-%m-%d %H:%M')} from {source}.",
        "#",
        "# Runs zerotui's training worker under the plain `deepspeed` launcher (from the active Python",
        "# environment), with this folder as the run directory: the worker reads plan.yaml and ds_config.json",
        "# from here and writes events.jsonl, status.json, checkpoints/ and final/ next to them.",
        f"# Watch it from another terminal with: zerotui attach {shlex.quote(str(out))}",
        "# Extra arguments go to the worker, e.g. ./launch.sh --resume to continue from the last checkpoint.",
        "#",
        "# ds_config.json also works without zerotui, with your own training script:",
        f"#   deepspeed --num_gpus {per_node} your_train.py --deepspeed {cfg}",
        "#   (HF Trainer: TrainingArguments(..., deepspeed=\"ds_config.json\"), or --deepspeed on its command",
        "#   line; plain DeepSpeed: deepspeed.initialize(model=..., model_parameters=..., config=\"ds_config.json\")).",
        f"# Its train_batch_size assumes {world} process(es) in total (micro-batch x accumulation x {world}).",
        "# It has no scheduler block: zerotui's engine runs the learning-rate schedule; add one for your script.",
        *multi_node,
        "set -euo pipefail",
        "# NVLink multicast stays off (NCCL NVLS, torch symmetric memory, NVSHMEM): see zerotui's GPU notes.",
        *env_lines,
        f'export DEEPSPEED_TIMEOUT="${{DEEPSPEED_TIMEOUT:-{DEFAULT_TIMEOUT_MINUTES}}}"  # minutes per collective',
        "export PYTHONUNBUFFERED=1",
        "exec deepspeed " + " ".join(quoted) + ' "$@"',
        "",
    ])


def _write_all(out: Path, contents: dict[str, str], force: bool) -> None:
    """Write every file or none: existing ones are refused up front (unless --force), and files this call
    created are removed again if a later write fails."""
    from zerotui.core.atomic import atomic_write_text, create_exclusive_text

    if out.exists() and not out.is_dir():
        raise RunError(f"{out} is a file, not a folder", "give -o a folder (it is created if missing)")
    existing = [name for name in contents if (out / name).exists()]
    if existing and not force:
        raise RunError(f"{out} already has {', '.join(existing)}", "use --force to replace them, or another -o DIR")
    created: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in contents.items():
            path = out / name
            was_there = path.exists()
            (atomic_write_text if force else create_exclusive_text)(path, text)
            if not was_there:
                created.append(path)
    except FileExistsError as err:
        _remove(created)
        raise RunError(f"{err.filename or out} appeared while exporting", "use --force to replace it") from None
    except OSError as err:
        _remove(created)
        raise RunError(f"cannot write into {out}: {err.strerror or err}", "check free space and permissions") from None
    os.chmod(out / "launch.sh", 0o755)


def _remove(paths: list[Path]) -> None:
    for p in paths:
        try:
            p.unlink()
        except OSError:
            pass


def run(args: argparse.Namespace) -> int:
    from zerotui.core.dsconfig import build_ds_config
    from zerotui.core.launcher import deepspeed_args

    if not (args.source or args.plan_preset or args.plan_file):
        raise PlanError("export needs a starting point: a preset name or a plan file",
                        "e.g. `zerotui export tiny-cpu-demo -o ./demo` (`zerotui presets` lists them)")
    plan = plan_from_args(args, args.source)
    source = args.source or args.plan_preset or str(args.plan_file)
    out = args.out.expanduser().resolve()
    detected, gpu_note = _detected_gpus(plan)
    world = plan.world_size(detected)
    spec, spec_note = _model_spec(plan)
    ds_config = build_ds_config(plan, world, spec, run_dir=out)
    port = plan.master_port or DEFAULT_PORT
    # launch.sh and plan.yaml name the GPU count the ds_config was sized for, so all three agree on
    # whichever machine the folder is copied to.
    if plan.gpu_ids is None:
        plan = plan.with_changes(gpus=plan.gpus_per_node(detected))
    argv = deepspeed_args(plan, out, None, master_port=port)
    argv[argv.index("--master_port") + 1] = "@PORT@"
    _write_all(out, {
        "ds_config.json": json.dumps(ds_config, indent=2) + "\n",
        "plan.yaml": f"# exported by zerotui from {source}\n" + plan.to_yaml(),
        "launch.sh": launch_script(out, argv, port, plan.gpus_per_node(detected), world, source, plan.nodes),
    }, args.force)
    print(f"wrote {', '.join(FILES)} to {out}")
    print(f"  world size {world}, train batch {plan.micro_batch} x {plan.grad_accum} x {world} = "
          f"{plan.micro_batch * plan.grad_accum * world}")
    for note in (gpu_note, spec_note):
        if note:
            print(f"  note: {note}")
    print(f"  run it: {shlex.quote(str(out / 'launch.sh'))}")
    return 0
