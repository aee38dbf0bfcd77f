#!/usr/bin/env bash
# On the GPU machine: the estimator's sweeps again with PyTorch's expandable segments (what every zerotui
# run gets: core/plan/allocator.py), every row in a process of its own (sweep.py --fresh), NCCL's
# initialisation log on (which communicators a row creates: docs/estimator.md, "The CUDA context").
# Each argument is SWEEP[:ID,ID...]; they share one deadline (DEADLINE seconds from the start; a row may
# run --config-timeout past it, and the files must be written before the device's 600 s limit).
#   DEADLINE=440 TAG=-a bash benchmarks/estimator/expandable_gpu.sh sweep2 sweep1
set -uo pipefail
source benchmarks/gpu_setup.sh
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
end=$(( $(date +%s) + ${DEADLINE:-440} ))
for arg in "$@"; do
  sweep=${arg%%:*}; only=(); [ "$arg" != "$sweep" ] && only=(--only "${arg#*:}")
  left=$(( end - $(date +%s) )); [ "$left" -gt 20 ] || { echo "no time left for $arg"; break; }
  python3 -m benchmarks.estimator.sweep --sweep "$sweep" "${only[@]}" --fresh --per-process 100 \
    --alloc-conf expandable_segments:True --out "$OUT/$sweep" --deadline "$left" --config-timeout 100 2>&1 \
    | grep -vE "Warning|warn\(" | tail -40
  # the device returns at most 8 files: the rows as one file, the logs (NCCL's among them) as another
  mv "$OUT/$sweep/estimator-raw.jsonl" "$OUT/$sweep${TAG:-}-raw.jsonl"
  tar czf "$OUT/$sweep${TAG:-}-logs.tgz" -C "$OUT/$sweep" . && rm -rf "${OUT:?}/$sweep"
done
