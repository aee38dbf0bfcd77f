#!/usr/bin/env bash
# On the GPU machine: seed scenarios with the worker's host RAM sampled (sitecustomize.py), each in its own
# worker process, then summary.py on each record. libaio comes from .whl/libaio where the image lacks it
# (NVMe plans). Usage: bash benchmarks/hostsnap/gpu.sh CAP SCENARIO...
set -uo pipefail
cap=${1:?cap}; shift
source benchmarks/gpu_setup.sh
if [ -d .whl/libaio ]; then
  L=$PWD/.whl/libaio/usr/lib/x86_64-linux-gnu; I=$PWD/.whl/libaio/usr/include
  export CFLAGS="-I$I" LDFLAGS="-L$L" CPATH="$I" LIBRARY_PATH="$L" LD_LIBRARY_PATH="$L"
fi
# DeepSpeed's ops first, outside the scenarios' time: a fresh machine compiles them inside the first
# run's worker otherwise (a minute or two, and the compilers' memory in its process tree)
timeout ${BUILD_TIMEOUT:-300} python3 -c "from zerotui.cli.commands.doctor import build_ops; \
raise SystemExit(build_ops(quiet=True))" || echo "building DeepSpeed's ops failed or timed out: the runs build them"
mkdir -p "$OUT/host"
for s in "$@"; do
  ZT_HOSTSNAP_DIR="$OUT/host" ZEROTUI_SPARE=0 PYTHONPATH="$PWD/benchmarks/hostsnap:$PYTHONPATH" \
    timeout ${HOST_TIMEOUT:-400} python3 -m benchmarks.seed_scenarios.run --out "$OUT/hostsnap-seed-$s.json" \
    --models-dir "$models" --cap "$cap" --scenario "$s" ${SEED_ARGS:---steps 3 --log-interval 1 --timeout 300} 2>&1 \
    | grep -vE "Warning|warn\(|Loading weights|it/s\]" | tail -4
done
for f in "$OUT"/host/hostsnap-*.json; do
  python3 -m benchmarks.hostsnap.summary "$f" --frames 4 --min-mib 64 >> "$OUT/hostsnap-summary.txt" 2>&1
done
cut -c1-330 "$OUT/hostsnap-summary.txt"
