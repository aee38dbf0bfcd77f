"""Write down what the estimator says a sweep's rows will hold on the H200 before they run, so the
measurement can be judged against a prediction it could not have shaped (the seed scenarios' twin:
benchmarks/seed_scenarios/predict.py). Runs anywhere: the shapes are config dictionaries.

    python -m benchmarks.estimator.predict_sweep --alloc-conf expandable_segments:True sweep1 sweep2

One line per configuration: the allocated peak, the fragmentation margin, the CUDA context and their sum
(what NVML should read at the peak; margin_table.total_error compares the same sum), in GiB.
"""
from __future__ import annotations

import argparse

from benchmarks.estimator.margin_rows import GIB, components
from benchmarks.estimator.matrix import SWEEPS, llama_config_dict
from zerotui.core.model.spec import _llama_family_spec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="+", choices=sorted(SWEEPS))
    ap.add_argument("--alloc-conf", default="", help="PYTORCH_CUDA_ALLOC_CONF the rows will run with")
    a = ap.parse_args()
    print(f"allocator: {a.alloc_conf or 'default'}; GiB: allocated + margin + context = total")
    for name in a.sweeps:
        for cfg in SWEEPS[name]:
            spec = _llama_family_spec(cfg.shape, llama_config_dict(cfg.shape), "benchmarks/estimator/matrix.py")
            c = components(cfg.plan_fields(), spec, a.alloc_conf)
            total = c["allocated_est"] + c["margin_est"] + c["context"]
            print(f"{name} {cfg.id:30s} {c['allocated_est'] / GIB:7.2f} + {c['margin_est'] / GIB:5.2f} + "
                  f"{c['context'] / GIB:4.2f} = {total / GIB:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
