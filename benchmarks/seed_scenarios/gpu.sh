#!/usr/bin/env bash
# On the GPU machine: install the carried wheels and zerotui, then run the named scenarios, results to
# $OUT. Usage: bash benchmarks/seed_scenarios/gpu.sh OUTNAME SCENARIO... (models are built in /dev/shm
# when it has room: writing 13.5 GB to the virtual disk takes minutes, to tmpfs seconds).
set -uo pipefail
out=${1:?output name}; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD TORCH_CUDA_ARCH_LIST=9.0 || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "editable install failed"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
shm=$(df -B1G --output=avail /dev/shm | tail -1 | tr -d ' ')
models=/tmp/zt-models; [ "${shm:-0}" -gt 40 ] && models=/dev/shm/zt-models
echo "shm ${shm}G free; models in $models"; nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
args=(); for s in "$@"; do args+=(--scenario "$s"); done
python3 -m benchmarks.seed_scenarios.run --out "$OUT/$out.json" --models-dir "$models" "${args[@]}" ${SEED_ARGS:-} 2>&1 \
  | grep -vE "Warning|warn\(|Loading weights|it/s\]" | tail -60
for d in /tmp/zt-seed-*/runs/*; do [ -d "$d" ] && tail -c 3000 "$d/worker.log" > "$OUT/$(basename "$d").log.txt"; done 2>/dev/null
ls $OUT
