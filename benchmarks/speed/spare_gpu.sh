#!/usr/bin/env bash
# On the GPU machine, in one call: what spare workers (core/run/spare.py) do there.
#   1. the GPU memory a waiting spare holds (first: the start-up runs below may reach the call's time limit);
#   2. start-up to the first step of the 1.1B job, new run and resume, with and without a spare
#      (benchmarks.speed.startup --spare both), after the ops are built once;
# Usage: bash benchmarks/speed/spare_gpu.sh [REPEATS]   (results and logs to $OUT)
set -uo pipefail
repeats=${1:-2}
source benchmarks/gpu_setup.sh
python3 -m zerotui.cli.main doctor --build-ops --json > "$OUT/build-ops.json" 2>&1 || echo "op build failed: $OUT/build-ops.json"
# A spare alone, waited for, then NVML's view of the GPU while it waits.
ZEROTUI_CACHE_DIR=/tmp/zt-spare-gpu-cache \
  python3 -m zerotui.cli.main spare start --wait 300 --json > "$OUT/spare-start.json" 2>&1
cat "$OUT/spare-start.json"
sleep 5
{
  echo "# nvidia-smi --query-compute-apps while the spare waits (its pids: $OUT/spare-start.json)"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  nvidia-smi --query-gpu=memory.used,memory.total --format=csv
} | tee "$OUT/spare-gpu-memory.txt"
ZEROTUI_CACHE_DIR=/tmp/zt-spare-gpu-cache python3 -m zerotui.cli.main spare stop --json
python3 -m benchmarks.speed.startup --out "$OUT/startup-spare.json" --models-dir "$models" --repeats "$repeats" \
  --spare both 2>&1 | grep -vE "Warning|warn\(|Loading weights|it/s\]" | tail -40
ls "$OUT"
