#!/usr/bin/env bash
# On the GPU machine: install the carried wheels and zerotui, then run the named scenarios, results to
# $OUT. Usage: bash benchmarks/seed_scenarios/gpu.sh OUTNAME SCENARIO... (models are built in /dev/shm
# when it has room: writing 13.5 GB to the virtual disk takes minutes, to tmpfs seconds).
set -uo pipefail
out=${1:?output name}; shift
source benchmarks/gpu_setup.sh
args=(); for s in "$@"; do args+=(--scenario "$s"); done
python3 -m benchmarks.seed_scenarios.run --out "$OUT/$out.json" --models-dir "$models" "${args[@]}" ${SEED_ARGS:-} 2>&1 \
  | grep -vE "Warning|warn\(|Loading weights|it/s\]" | tail -60
for d in /tmp/zt-seed-*/runs/*; do [ -d "$d" ] && tail -c 3000 "$d/worker.log" > "$OUT/$(basename "$d").log.txt"; done 2>/dev/null
ls $OUT
