"""Write down what the estimator says of a speed job's contenders before they run on the GPU machine: GPU
peak, host peak (with and without the end's save: the speed runs save nothing) and the speed model's step
time. Runs anywhere (a config-only model folder, a stated GPU).

    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python -m benchmarks.speed.predict --gpu-mem 80GiB 1b-z2-pin
"""
from __future__ import annotations

from benchmarks.seed_scenarios.predict import config_folder, config_only
from benchmarks.speed.run import JOBS, plan_for


def main() -> int:
    from zerotui.core.estimate import host
    from zerotui.core.estimate.budget import estimate
    from zerotui.core.estimate.job import job_for
    from zerotui.core.estimate.speed import step_time
    from zerotui.core.model.spec import spec_for_plan

    with config_only("jobs", "80GiB") as (a, hw, work, data):
        for name in a.jobs:
            folder = config_folder(work, JOBS[name]["shape"])
            for value in JOBS[name]["values"]:
                plan = plan_for(name, value, folder, data, 16, 4, 0)
                spec = spec_for_plan(plan)
                b = estimate(plan, hw, spec)
                job = job_for(plan, spec, hw, None)
                phase, parts = host.host_peak(job, host.offloaded(job), saves=False)
                st = step_time(plan, spec, int(job.psit))
                tokens = plan.micro_batch * plan.grad_accum * plan.seq_len
                print(f"{name} {JOBS[name]['vary']}={value}: GPU {b.gpu_bytes / 2**30:.2f} GiB (allocated "
                      f"{b.gpu_allocated_bytes / 2**30:.2f} at the {b.peak_phase}); host {b.cpu_bytes / 2**30:.2f} GiB at "
                      f"{b.host_phase}, {sum(parts.values()) / 2**30:.2f} GiB without saves (at {phase}); speed model "
                      f"{st['total']:.3f} s a step, {tokens / st['total']:.0f} tokens/s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
