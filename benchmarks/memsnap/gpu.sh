#!/usr/bin/env bash
# On the GPU machine: seed scenarios under PyTorch's allocator history (sitecustomize.py), then
# summary.py on each worker's snapshot. Usage: [SNAP_NAME=memsnap-seed] bash benchmarks/memsnap/gpu.sh CAP SCENARIO...
# (SNAP_NAME names the run's result file, so two caps in one device call keep both.) A cap above 80 GiB
# needs an H200: pass needs_h200 to the device call, or an H100 may answer it (the harness then warns).
# ZeRO-3 with the optimizer on the CPU (1b-full-ho4, 2026-12-05) failed its first step under the recording
# (SystemError from an autograd Function's apply) and trained without it: memsnap-1b-ho4-2026-12-05.txt.
set -uo pipefail
cap=${1:?cap}; shift
source benchmarks/gpu_setup.sh
mkdir -p "$OUT/snap"
args=(); for s in "$@"; do args+=(--scenario "$s"); done
ZT_MEMSNAP_DIR="$OUT/snap" ZEROTUI_SPARE=0 PYTHONPATH="$PWD/benchmarks/memsnap:$PYTHONPATH" \
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout ${SNAP_TIMEOUT:-400} \
  python3 -m benchmarks.seed_scenarios.run --out "$OUT/${SNAP_NAME:-memsnap-seed}.json" --models-dir "$models" --cap "$cap" \
  "${args[@]}" --steps 3 --log-interval 1 --timeout 300 2>&1 | grep -vE "Warning|warn\(|Loading weights|it/s\]" | tail -8
for f in "$OUT"/snap/*.pickle; do
  [ -f "$f" ] || continue
  python3 -m benchmarks.memsnap.summary "$f" > "${f%.pickle}.txt" 2>&1; head -c 6000 "${f%.pickle}.txt"
  rm -f "$f"   # too large to bring back; the summary is what comes back
done
ls -la "$OUT" "$OUT/snap"
