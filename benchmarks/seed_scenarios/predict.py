"""Write down the estimate for seed scenarios before they run on the GPU machine, so a result can be
judged against a prediction it could not have shaped. Runs anywhere (config-only model folders, a stated
GPU); the allocator is the one this process's PYTORCH_CUDA_ALLOC_CONF gives.

    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python -m benchmarks.seed_scenarios.predict \
        --gpu-mem 140GiB 40GiB:1b-full-ho5,1b-full-ho12 24GiB:7b-lora-ho1
"""
from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.seed_scenarios.scenarios import SCENARIOS, plan_for
from benchmarks.seed_scenarios.shapes import SHAPES


def config_folder(work: Path, shape: str) -> Path:
    """A model folder of ``shape`` with its config.json only (what the estimator reads), made once."""
    from transformers import AutoConfig

    folder = work / shape
    if not folder.exists():
        fields = dict(SHAPES[shape])
        AutoConfig.for_model(fields.pop("model_type", "llama"), **fields, dtype="bfloat16").save_pretrained(folder)
    return folder


@contextmanager
def config_only(argv_tail: str, gpu_mem: str) -> Iterator[tuple[Any, Any, Path, Path]]:
    """The arguments (``argv_tail``: the positional ones' name; --gpu-mem, --ram), the stated machine, and a
    scratch folder with a one-line dataset, for writing estimates down before runs."""
    from zerotui.core.hardware.detect import stated_hardware

    ap = argparse.ArgumentParser()
    ap.add_argument(argv_tail, nargs="+")
    ap.add_argument("--gpu-mem", default=gpu_mem, help="the GPU the runs will have (its memory)")
    ap.add_argument("--ram", default="128GiB")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="zt-predict-") as tmp:
        work = Path(tmp)
        data = work / "data.jsonl"
        data.write_text('{"text": "config only"}\n')
        yield a, stated_hardware(gpu_mem=a.gpu_mem, gpus=1, ram=a.ram), work, data


def main() -> int:
    from zerotui.core.estimate.budget import estimate
    from zerotui.core.sizes import parse_size

    with config_only("groups", "140GiB") as (a, hw, work, data):  # groups: CAP:SCENARIO[,SCENARIO...]
        for group in a.groups:
            cap, names = group.split(":", 1)
            for name in names.split(","):
                folder = config_folder(work, SCENARIOS[name][0])
                plan = plan_for(name, folder, data, parse_size(cap), 4, 1, hardware=hw, nvme_dir=work / "nvme")
                b = estimate(plan, hw)
                print(f"{name:24s} cap {cap}: gpu_bytes {b.gpu_bytes / 2**30:.2f} GiB, allocated "
                      f"{b.gpu_allocated_bytes / 2**30:.2f} at the {b.peak_phase}  ({plan.method} {plan.precision}, "
                      f"ZeRO-{plan.stage}, optimizer {plan.offload_optimizer}, weights {plan.offload_params}, "
                      f"{plan.micro_batch}x{plan.grad_accum}x{plan.seq_len}, ckpt {plan.grad_ckpt}, "
                      f"kernels {plan.kernels})", flush=True)
                if plan.uses_nvme():  # what NVMe offload's runs are there to check: host RAM and the disk too
                    print(f"{'':24s} host {b.cpu_bytes / 2**30:.2f} GiB at {b.host_phase}; NVMe "
                          f"{b.nvme_bytes / 2**30:.2f} GiB ({', '.join(f'{k} {v / 2**30:.2f}' for k, v in b.breakdown['nvme'].items())})",
                          flush=True)
                elif "cpu" in (plan.offload_optimizer, plan.offload_params):  # host RAM is half of what these check
                    print(f"{'':24s} host {b.cpu_bytes / 2**30:.2f} GiB at {b.host_phase} (pin_memory "
                          f"{plan.pin_memory}); speed model {_step_s(plan, b.params_trainable):.2f} s a step (H200 coefficients)", flush=True)
    return 0


def _step_s(plan, trainable: int) -> float:
    """The speed model's step time, for the trainable count the budget already has."""
    from zerotui.core.estimate.speed import step_time
    from zerotui.core.model.spec import spec_for_plan

    return step_time(plan, spec_for_plan(plan), trainable)["total"]


if __name__ == "__main__":
    raise SystemExit(main())
