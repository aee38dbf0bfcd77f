#!/usr/bin/env bash
# On the GPU machine, in one call: what events and telemetry cost a GPU run (benchmarks.speed.overhead on
# the 1.1B job as fit picks it: bf16, ZeRO-0, micro-batch 16 x 1024, kernels auto), telemetry every 5 s
# (the default) and every 1 s; first, what the GPU holds outside PyTorch's allocator
# (benchmarks.estimator.context). Usage: bash benchmarks/speed/overhead_gpu.sh   (results to $OUT)
set -uo pipefail
source benchmarks/gpu_setup.sh
python3 -m benchmarks.estimator.context --out "$OUT/context.json" 2>&1 | grep -v Warning | tail -30
python3 -c "import sys; from pathlib import Path; from benchmarks.seed_scenarios.models import build_model; print(build_model('1b', Path(sys.argv[1])))" "$models/llama-1b" 2>&1 | tail -1
for t in 5 1; do
  python3 -m benchmarks.speed.overhead --out "$OUT/overhead-gpu-telemetry${t}s.json" --model "$models/llama-1b" \
    --precision bf16 --micro-batch 16 --seq-len 1024 --stage 0 --window 30 --telemetry-s "$t" 2>&1 | tail -22
done
ls "$OUT"
