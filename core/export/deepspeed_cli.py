"""Export a plan as files for the plain ``deepspeed`` command: ds_config.json, plan.yaml and launch.sh,
with the folder as the run directory of zerotui's worker. Used by `zerotui export` and the wizard.

ds_config.json and plan.yaml are the launch's own files (``run.prepare.launch_files``); launch.sh starts
DeepSpeed's launcher under zerotui's supervisor, which writes the run's end as for any run."""
from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from zerotui.core.atomic import user_mode
from zerotui.core.errors import ModelError, RunError
from zerotui.core.export.staged_write import write_files
from zerotui.core.model.spec import spec_for_plan
from zerotui.core.plan.schema import Plan
from zerotui.core.run.launcher import (
    NO_MULTICAST_ENV,
    SUPERVISOR_MODULE,
    deepspeed_args,
    deepspeed_env_lines,
)
from zerotui.core.run.prepare import DS_CONFIG, PLAN, launch_files
from zerotui.core.train.distributed import DEFAULT_TIMEOUT_MINUTES

#: DeepSpeed's own default rendezvous port (launcher/constants.py TORCH_DISTRIBUTED_DEFAULT_PORT).
DEFAULT_PORT = 29500
FILES = ("ds_config.json", "plan.yaml", "launch.sh")


def _detected_gpus(plan) -> tuple[int, str]:
    """GPUs to size the world with, and a note saying where the number came from."""
    if plan.gpu_ids is not None or plan.gpus is not None:
        return 0, ""
    from zerotui.core.hardware.detect import (
        detect,  # NVML: only when the plan does not say
    )

    n = detect(probe_disks=False).gpu_count
    return n, f"sized for the {n} GPU(s) detected here (use --gpus N for another machine)"


def _model_spec(plan):
    """The model's shape for bucket sizes, or None (DeepSpeed's defaults) with a note why."""
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
        "# from here and writes events.jsonl, status.json, checkpoints/ and final/ next to them. zerotui's",
        "# supervisor around the launcher records how the run ended (which rank failed, and why).",
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
        "# NVLink multicast stays off (NCCL NVLS, torch symmetric memory, NVSHMEM): see docs/multi_gpu.md.",
        *env_lines,
        f'export DEEPSPEED_TIMEOUT="${{DEEPSPEED_TIMEOUT:-{DEFAULT_TIMEOUT_MINUTES}}}"  # minutes per collective',
        "export PYTHONUNBUFFERED=1",
        f'exec "${{PYTHON:-python3}}" -m {SUPERVISOR_MODULE} {shlex.quote(str(out))} --local-ranks {per_node} -- '
        "deepspeed " + " ".join(quoted) + ' "$@"',
        "",
    ])


def _write_all(out: Path, contents: dict[str, str], force: bool) -> None:
    """Write every file or none (core/export/staged_write.py): what is in the way is named up front, the
    new files are staged next to their targets and renamed in only when all are written, and a folder
    this call created is removed again on failure."""
    if out.exists() and not out.is_dir():
        raise RunError(f"{out} is a file, not a folder", "give -o a folder (it is created if missing)")
    existing = [name for name in contents if os.path.lexists(out / name)]
    for name in existing:
        if not (out / name).is_file() or (out / name).is_symlink():
            raise RunError(f"{out / name} is not a plain file; export writes its {name} there",
                           "move it away, or give another -o DIR")
    if existing and not force:
        raise RunError(f"{out} already has {', '.join(existing)}", "use --force to replace them, or another -o DIR")
    modes = {name: user_mode(0o777 if name.endswith(".sh") else 0o666) for name in contents}
    try:
        write_files(out, contents, modes)
    except FileExistsError as err:
        raise RunError(f"{err.filename or out} appeared while exporting", "use --force to replace it") from None
    except OSError as err:
        where = err.filename or out
        raise RunError(f"cannot write {where}: {err.strerror or err}; nothing was changed",
                       "check free space and permissions, or give another -o DIR") from None


@dataclass
class ExportResult:
    out: Path
    world: int
    train_batch: int
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"wrote {', '.join(FILES)} to {self.out}",
                 f"  world size {self.world}, train batch = {self.train_batch}"]
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(f"  run it: {shlex.quote(str(self.out / 'launch.sh'))}")
        return "\n".join(lines)


def export_plan(plan: Plan, out: Path, source: str, force: bool = False,
                detected_gpus: int | None = None) -> ExportResult:
    """Write the three files (all or none). ``detected_gpus`` sizes the world when the plan does not say;
    None detects this machine's GPUs."""
    out = Path(out).expanduser().resolve()
    if detected_gpus is None:
        detected, gpu_note = _detected_gpus(plan)
    else:
        detected, gpu_note = detected_gpus, ""
    world = plan.world_size(detected)
    spec, spec_note = _model_spec(plan)
    port = plan.master_port or DEFAULT_PORT
    # launch.sh and plan.yaml name the GPU count the ds_config was sized for, so all three agree on
    # whichever machine the folder is copied to.
    if plan.gpu_ids is None:
        plan = plan.with_changes(gpus=plan.gpus_per_node(detected))
    argv = deepspeed_args(plan, out, None, master_port=port)
    argv[argv.index("--master_port") + 1] = "@PORT@"
    files = launch_files(plan, world, spec, out, plan_header=f"# exported by zerotui from {source}\n")
    _write_all(out, {
        DS_CONFIG: files[DS_CONFIG],
        PLAN: files[PLAN],
        "launch.sh": launch_script(out, argv, port, plan.gpus_per_node(detected), world, source, plan.nodes),
    }, force)
    return ExportResult(out, world, plan.sequences_per_step(world), [n for n in (gpu_note, spec_note) if n])
