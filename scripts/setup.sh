#!/usr/bin/env bash
# Sets up zerotui in ./.venv (idempotent: a second run with nothing changed takes a second).
#
#   bash scripts/setup.sh          # zerotui and its dependencies
#   bash scripts/setup.sh --test   # ... plus what the test suite needs
#
# PyTorch comes first and is chosen for this machine: the normal (CUDA) build from PyPI where an NVIDIA
# GPU is visible, the CPU build elsewhere. Installing it first matters: zerotui asks for `torch>=2.4`, which
# an installed build satisfies, so the later `pip install` never swaps a CPU build for a multi-GB CUDA one.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
PYTHON=${PYTHON:-python3}
VENV=${ZEROTUI_VENV:-.venv}
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"

say() { printf '[setup] %s\n' "$*" >&2; }

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  say "zerotui needs Python 3.10 or newer; set PYTHON=/path/to/python3.11 and run again"
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV" || { say "could not create a venv: install python3-venv (apt install python3-venv)"; exit 1; }
fi
py="$VENV/bin/python"
pip=("$py" -m pip --disable-pip-version-check)

# Skip everything when this exact pyproject + extras were already installed into this venv.
stamp="$VENV/.zerotui-setup"
want="$(sha256sum pyproject.toml | cut -c1-16)$extras"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$py" -c 'import zerotui.core.plan.schema, torch' 2>/dev/null; then
  exit 0
fi

has_nvidia_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && return 0
  [ -e /proc/driver/nvidia/gpus ] && [ -n "$(ls -A /proc/driver/nvidia/gpus 2>/dev/null)" ]
}

if ! "$py" -c 'import torch' 2>/dev/null; then
  if has_nvidia_gpu; then
    say "NVIDIA GPU found: installing PyTorch's CUDA build from PyPI (a few GB)"
    "${pip[@]}" install "torch>=2.4"
  else
    say "no NVIDIA GPU: installing PyTorch's CPU build"
    # A CPU wheel in pip's local wheel folders (find-links) if there is one, else PyTorch's CPU index.
    # --no-index keeps the first try offline, so it fails in a moment when there is no local wheel.
    # Last resort (PyTorch's index unreachable): PyPI's default build, which also runs on the CPU.
    "${pip[@]}" install -q --no-deps --no-index "torch==2.13.0+cpu" 2>/dev/null \
      || "${pip[@]}" install -q --no-deps --index-url https://download.pytorch.org/whl/cpu "torch>=2.4" \
      || { say "PyTorch's CPU index is unreachable: installing PyPI's default torch build (larger)"; \
           "${pip[@]}" install -q --no-deps "torch>=2.4"; }
    # torch's own dependencies (sympy, networkx, ...) from the normal index; the installed torch stays.
    tv=$("$py" -c 'import importlib.metadata as m; print(m.version("torch"))')
    "${pip[@]}" install -q "torch==$tv"
  fi
fi

# Fused GPU kernels only where there is a GPU to run them (the `gpu` extra: liger-kernel).
if has_nvidia_gpu; then
  extras=${extras:+${extras%]},gpu]}; extras=${extras:-[gpu]}
fi

# System packages some tests drive for real, installed here when the test tools are asked for and apt
# can do it: headless Chromium (the `zerotui serve` test opens the dashboard in it), zsh (the
# completion test presses TAB in it; bash is always there) and libaio's headers (DeepSpeed builds its
# async_io op against them: the NVMe offload tests write real swap files through it).
have() {  # whether a package's part is here: a command, or a header for libaio-dev
  case "$1" in libaio-dev) [ -e /usr/include/libaio.h ] ;; *) command -v "$1" >/dev/null 2>&1 ;; esac
}
if [ "${1:-}" = "--test" ] && command -v apt-get >/dev/null 2>&1; then
  as_root=""; [ "$(id -u)" -ne 0 ] && as_root="sudo -n"
  for pkg in chromium zsh libaio-dev; do  # one at a time: a package apt lacks must not stop the others
    have "$pkg" && continue
    say "installing $pkg for the tests (apt-get install $pkg)"
    $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >/dev/null 2>&1 \
      || { $as_root apt-get update -q >/dev/null 2>&1 && $as_root env DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -q "$pkg" >/dev/null 2>&1; } \
      || say "could not install $pkg (no root?): the tests that need it say so; apt install $pkg"
  done
fi

say "installing zerotui$extras (editable) and its dependencies"
"${pip[@]}" install -q -e ".$extras"
echo "$want" > "$stamp"
say "done: $("$py" -c 'import torch, deepspeed; print(f"torch {torch.__version__}, deepspeed {deepspeed.__version__}")' 2>/dev/null | tail -1)"
