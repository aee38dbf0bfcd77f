#!/usr/bin/env bash
# On the GPU machine: install the carried wheels and zerotui, then run benchmarks.speed.run with the given
# arguments, results to $OUT. Usage: bash benchmarks/speed/gpu.sh OUTNAME ARGS... (model folders go to
# /dev/shm when it has room; run folders, with their checkpoints, to the disk under /tmp).
set -uo pipefail
out=${1:?output name}; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD TORCH_CUDA_ARCH_LIST=9.0 || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "editable install failed"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
shm=$(df -B1G --output=avail /dev/shm | tail -1 | tr -d ' ')
models=/tmp/zt-models; [ "${shm:-0}" -gt 40 ] && models=/dev/shm/zt-models
echo "shm ${shm}G free; models in $models; disk $(df -h --output=avail /tmp | tail -1)"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
python3 -m benchmarks.speed.run --out "$OUT/$out.json" --models-dir "$models" --runs-dir /tmp/zt-speed-runs "$@" 2>&1 \
  | grep -vE "Warning|warn\(|Loading weights|it/s\]|Writing model" | tail -60
for d in /tmp/zt-speed-runs/runs/*; do [ -d "$d" ] && tail -c 3000 "$d/worker.log" > "$OUT/$(basename "$d").log.txt"; done 2>/dev/null
ls $OUT
