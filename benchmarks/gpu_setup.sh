# Sourced by the benchmarks' GPU scripts (benchmarks/*/gpu.sh) on the GPU machine: install the carried
# wheels (.whl/: DeepSpeed and what the image lacks) and zerotui, and choose where model folders go
# ($models: /dev/shm when it has room — writing 13.5 GB to the virtual disk takes minutes, to tmpfs seconds).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD TORCH_CUDA_ARCH_LIST=9.0 || exit 1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "editable install failed"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
shm=$(df -B1G --output=avail /dev/shm | tail -1 | tr -d ' ')
models=/tmp/zt-models; [ "${shm:-0}" -gt 40 ] && models=/dev/shm/zt-models
# a plan that needs most of the host's RAM cannot have 13.5 GB of model files in tmpfs beside it
[ -n "${ZT_MODELS_DIR:-}" ] && models=$ZT_MODELS_DIR
echo "shm ${shm}G free; models in $models; disk $(df -h --output=avail /tmp | tail -1)"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
