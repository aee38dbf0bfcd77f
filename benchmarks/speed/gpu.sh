#!/usr/bin/env bash
# On the GPU machine: install the carried wheels and zerotui, then run benchmarks.speed.run with the given
# arguments, results to $OUT. Usage: bash benchmarks/speed/gpu.sh OUTNAME ARGS... (model folders go to
# /dev/shm when it has room; run folders, with their checkpoints, to the disk under /tmp).
set -uo pipefail
out=${1:?output name}; shift
source benchmarks/gpu_setup.sh
python3 -m benchmarks.speed.run --out "$OUT/$out.json" --models-dir "$models" --runs-dir /tmp/zt-speed-runs "$@" 2>&1 \
  | grep -vE "Warning|warn\(|Loading weights|it/s\]|Writing model" | tail -60
for d in /tmp/zt-speed-runs/runs/*; do [ -d "$d" ] && tail -c 3000 "$d/worker.log" > "$OUT/$(basename "$d").log.txt"; done 2>/dev/null
ls $OUT
