#!/usr/bin/env bash
# On the GPU machine: seed scenarios again with PyTorch's expandable segments
# (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, recorded in each result as "alloc_conf"), then
# optionally benchmarks.speed.run's allocator A/B for one job (the same plan with the default allocator
# and with expandable segments, alternating). Each GROUP is CAP:SCENARIO[,SCENARIO...] and runs as one
# benchmarks.seed_scenarios.run command under that cap (results: seed-scenarios-OUTNAME-N.json). Usage:
#   SEED_ARGS="--steps 4 --log-interval 1 --timeout 200" \
#     bash benchmarks/seed_scenarios/expandable_gpu.sh OUTNAME SPEEDJOB|none GROUP...
set -uo pipefail
out=${1:?output name}; job=${2:?speed job, or none}; shift 2
source benchmarks/gpu_setup.sh
export PYTHONUNBUFFERED=1
deadline=$(( $(date +%s) + ${SEED_TIMEOUT:-360} ))
n=0
for group in "$@"; do
  n=$((n + 1)); cap=${group%%:*}; args=()
  IFS=, read -ra names <<< "${group#*:}"; for s in "${names[@]}"; do args+=(--scenario "$s"); done
  left=$(( deadline - $(date +%s) )); [ "$left" -gt 30 ] || { echo "no time left for group $n"; break; }
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout "$left" \
    python3 -m benchmarks.seed_scenarios.run --out "$OUT/seed-scenarios-$out-$n.json" --models-dir "$models" \
    --cap "$cap" "${args[@]}" ${SEED_ARGS:-} 2>&1 | grep -vE "Warning|warn\(|Loading weights|it/s\]" | tail -20
done
if [ "$job" != none ]; then
  timeout ${SPEED_TIMEOUT:-200} python3 -m benchmarks.speed.run --out "$OUT/speed-$out.json" --models-dir "$models" \
    --runs-dir /tmp/zt-speed-runs --job "$job" ${SPEED_ARGS:---repeats 2 --steps 20 --log-interval 5} 2>&1 \
    | grep -vE "Warning|warn\(|Loading weights|it/s\]|Writing model" | tail -12
fi
ls $OUT
