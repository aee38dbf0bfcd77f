"""Known ways a DeepSpeed set-up breaks, each with the concrete fix: the heart of ``zerotui doctor``.

``find_pitfalls`` is pure: it reads the detected ``Hardware``, what the doctor probe found in torch and
DeepSpeed (see doctor_probe.py) and the environment, so each rule is tested with the situation spelled
out instead of needing a machine that is broken in that way.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional

from zerotui.core.deepspeed.prebuild import LIBAIO_HINT
from zerotui.core.hardware.types import Hardware
from zerotui.core.sizes import format_bytes

GiB = 1 << 30
SEVERITIES = ("error", "warning", "info")
# DeepSpeed's env_report.py (get_shm_size) warns below 512 MB; Docker gives containers 64 MB by default.
SHM_MIN_BYTES = 512 * (1 << 20)
# CPU optimizer offload keeps fp32 master weights, Adam moments and fp32 gradients in host RAM:
# 16-18 bytes per trainable parameter (docs/estimator.md "Offload", from ZeRO-Offload / stage_1_and_2.py).
OFFLOAD_BYTES_PER_PARAM = 18
LOW_RAM_BYTES = 32 * GiB
# The ops a fine-tune JIT-builds when the wheel has none pre-built: Adam on the GPU and on the CPU.
_TRAINING_OPS = ("fused_adam", "cpu_adam")


@dataclass
class Pitfall:
    id: str
    severity: str       # error: training will fail; warning: some features will; info: worth knowing
    message: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _version_tuple(text: Optional[str]) -> Optional[tuple[int, int]]:
    m = re.match(r"^\s*(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_arch_list(value: Optional[str], severe: bool) -> Optional[Pitfall]:
    """TORCH_CUDA_ARCH_LIST entries DeepSpeed's JIT builder cannot parse.

    DeepSpeed 0.19 sorts the list with ``int(part.split('+')[0])`` over ``cc.split('.')``
    (op_builder/builder.py, compute_capability_args), so torch-only spellings such as ``9.0a`` (Hopper's
    arch-specific features) or ``sm_90`` crash every JIT build with "invalid literal for int()".
    """
    if not value or not value.strip():
        return None
    tokens = [t for t in re.split(r"[;\s]+", value.strip()) if t]
    bad = [t for t in tokens if not re.fullmatch(r"\d+\.\d+(\+PTX)?", t)]
    if not bad:
        return None
    fixed: list[str] = []
    for t in tokens:
        m = re.fullmatch(r"(?:sm_|compute_)?(\d+?)\.?(\d)[a-z]*(\+PTX)?", t, re.IGNORECASE)
        good = f"{m.group(1)}.{m.group(2)}{'+PTX' if m.group(3) else ''}" if m else None
        if good and good not in fixed:
            fixed.append(good)
    first = bad[0]
    minor = first.split(".", 1)[1].split("+")[0] if "." in first else first
    fix = f'export TORCH_CUDA_ARCH_LIST="{";".join(fixed)}"' if fixed else "unset TORCH_CUDA_ARCH_LIST"
    return Pitfall(
        "torch_cuda_arch_list", "error" if severe else "warning",
        f"TORCH_CUDA_ARCH_LIST={value!r} has {', '.join(repr(b) for b in bad)}, which DeepSpeed cannot "
        f"read: its JIT builds (FusedAdam, CPUAdam) fail with \"invalid literal for int() with base 10: "
        f"'{minor}'\"", fix)


def _torch_pitfalls(hw: Hardware, sw: Mapping[str, Any]) -> list[Pitfall]:
    out: list[Pitfall] = []
    if sw.get("probe_error"):
        out.append(Pitfall("probe_failed", "error", f"checking torch and DeepSpeed failed: {sw['probe_error']}",
                           "run `python -c 'import torch, deepspeed'` to see the full error, then reinstall "
                           "the package it names"))
        return out
    if sw.get("torch_error"):
        out.append(Pitfall("torch_import", "error", f"PyTorch cannot be imported: {sw['torch_error']}",
                           "install it (the CUDA build on a GPU machine, the CPU build elsewhere; see README)"))
        return out
    torch = sw.get("torch") or {}
    cuda = torch.get("cuda")
    if hw.gpus and not cuda and not torch.get("hip"):
        driver = hw.cuda_driver_version or "?"
        out.append(Pitfall(
            "torch_cpu_build", "error",
            f"torch {torch.get('version')} is a CPU-only build on a machine with {hw.gpu_count} NVIDIA GPU(s)",
            f"pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu126 (choose a "
            f"cuXY not newer than the driver's CUDA {driver})"))
    drv, built = _version_tuple(hw.cuda_driver_version), _version_tuple(cuda)
    if hw.gpus and drv and built and built > drv:
        severe = built[0] > drv[0]
        out.append(Pitfall(
            "driver_too_old", "error" if severe else "warning",
            f"torch is built for CUDA {cuda} but the NVIDIA driver {hw.driver_version} supports CUDA "
            f"{hw.cuda_driver_version}" + ("" if severe else " (runs through CUDA minor-version "
                                                             "compatibility; JIT-compiled PTX may not load)"),
            "update the NVIDIA driver, or install a torch built for an older CUDA"))
    elif hw.gpus and cuda and torch.get("cuda_available") is False:
        out.append(Pitfall("torch_no_gpu", "error",
                           f"torch {torch.get('version')} (CUDA {cuda}) cannot use the GPUs that NVML sees",
                           "check the container gets them (docker run --gpus all) and that /dev/nvidia* "
                           "are readable"))
    return out


def _toolkit_pitfalls(hw: Hardware, sw: Mapping[str, Any]) -> list[Pitfall]:
    torch = sw.get("torch") or {}
    ops = (sw.get("deepspeed") or {}).get("ops") or {}
    cuda = torch.get("cuda")
    needs_jit = [n for n in _TRAINING_OPS if n in ops and not ops[n].get("installed")]
    if not (hw.gpus and cuda and needs_jit):
        return []
    nvcc = sw.get("nvcc_version")
    if not sw.get("cuda_home") or not nvcc:
        return [Pitfall(
            "no_cuda_toolkit", "error",
            f"no CUDA compiler (nvcc / CUDA_HOME) and DeepSpeed's {', '.join(needs_jit)} are not pre-built: "
            "they compile on first use and that will fail",
            f"install the CUDA {cuda} toolkit (e.g. conda install -c nvidia cuda-nvcc={cuda}) and export "
            "CUDA_HOME to it, or install DeepSpeed with its ops pre-built (DS_BUILD_OPS=1)")]
    have, want = _version_tuple(nvcc), _version_tuple(cuda)
    if not have or not want or have == want:
        return []
    table = (sw.get("deepspeed") or {}).get("cuda_minor_mismatch_ok") or {}
    same_family = str(have[0]) in table and f"{have[0]}.{have[1]}" in table[str(have[0])] \
        and f"{want[0]}.{want[1]}" in table[str(have[0])]
    if same_family:  # DeepSpeed accepts these minor differences (op_builder/builder.py)
        return []
    return [Pitfall(
        "cuda_toolkit_mismatch", "error",
        f"the CUDA toolkit at {sw.get('cuda_home')} is {nvcc} but torch is built for CUDA {cuda}: DeepSpeed "
        "refuses to compile its ops (\"Installed CUDA version ... does not match\")",
        f"install the CUDA {want[0]}.{want[1]} toolkit and point CUDA_HOME at it (DS_SKIP_CUDA_CHECK=1 "
        "skips the check at your own risk)")]


def _deepspeed_pitfalls(hw: Hardware, sw: Mapping[str, Any]) -> list[Pitfall]:
    out: list[Pitfall] = []
    if sw.get("probe_error") or sw.get("torch_error"):
        return out
    err = sw.get("deepspeed_error")
    if err:
        if "No module named 'deepspeed'" in err:
            out.append(Pitfall("deepspeed_missing", "error", "DeepSpeed is not installed", "pip install deepspeed"))
        else:
            out.append(Pitfall("deepspeed_import", "error", f"importing deepspeed fails: {err}",
                               "reinstall it against this torch: pip install --force-reinstall --no-cache-dir "
                               "deepspeed; `ds_report` shows more"))
        return out
    ops = (sw.get("deepspeed") or {}).get("ops") or {}
    pending = [n for n in _TRAINING_OPS if n in ops and not ops[n].get("installed") and not ops[n].get("jit_built")]
    if pending and sw.get("ninja") is False:
        out.append(Pitfall("no_ninja", "error", f"ninja is missing, so DeepSpeed cannot compile {', '.join(pending)}",
                           "pip install ninja"))
    if pending and not sw.get("compiler"):
        out.append(Pitfall("no_compiler", "error",
                           f"no C++ compiler, so DeepSpeed cannot compile {', '.join(pending)}",
                           "sudo apt install build-essential (Debian/Ubuntu) or sudo dnf install gcc-c++"))
    aio = ops.get("async_io")
    if aio is not None and not aio.get("installed") and not aio.get("compatible"):
        out.append(Pitfall(
            "libaio_missing", "warning",
            "libaio is missing, so DeepSpeed's async_io op cannot build: NVMe offload is unavailable",
            LIBAIO_HINT))
    elif aio is not None:
        out += _memlock_pitfalls()
    return out


#: what a 7B model's optimizer on NVMe locks with zerotui's sub-group (four fp32 buffers of 1e8 elements)
NVME_7B_LOCKED_BYTES = 4 * 4 * 100_000_000


def _memlock_pitfalls() -> list[Pitfall]:
    """A locked-memory limit too low for NVMe offload's swap buffers (core/deepspeed/memlock.py)."""
    from zerotui.core.deepspeed.memlock import HINT, allowance

    room = allowance()
    if room is None or room >= NVME_7B_LOCKED_BYTES:
        return []
    return [Pitfall("memlock_low", "info",
                    f"this account may lock only {format_bytes(room)} of host RAM (ulimit -l), and NVMe offload "
                    f"locks its swap buffers ({format_bytes(NVME_7B_LOCKED_BYTES)} for a 7B model's optimizer): "
                    "`zerotui train` refuses such plans until the limit is raised", HINT)]


def _machine_pitfalls(hw: Hardware) -> list[Pitfall]:
    out: list[Pitfall] = []
    if not hw.gpus:
        out.append(Pitfall("no_gpu", "info",
                           f"no NVIDIA GPU visible ({hw.nvml_error or 'NVML reports none'}); only the tiny CPU "
                           "demo trains here, plans for other machines still work",
                           "on a GPU machine: install the NVIDIA driver, or start the container with --gpus all"))
    for note in hw.notes:
        if note.startswith("GPU "):
            out.append(Pitfall("gpu_query", "warning", note, "check `nvidia-smi -q`; a GPU that fails NVML "
                               "queries may have fallen off the bus (dmesg shows Xid errors)"))
    if hw.shm_total_bytes and hw.shm_total_bytes < SHM_MIN_BYTES:
        out.append(Pitfall(
            "shm_small", "error" if hw.gpu_count > 1 else "warning",
            f"/dev/shm is only {format_bytes(hw.shm_total_bytes)} (Docker's default is 64 MB): NCCL between "
            "GPUs and DeepSpeed's shared-memory communication fail or die with a bus error",
            "start the container with --shm-size=16g (or --ipc=host); on Kubernetes mount an emptyDir with "
            "medium: Memory at /dev/shm"))
    if hw.ram_total_bytes and hw.ram_total_bytes < LOW_RAM_BYTES:
        params = hw.ram_total_bytes / OFFLOAD_BYTES_PER_PARAM / 1e9
        out.append(Pitfall(
            "low_ram", "warning",
            f"{format_bytes(hw.ram_total_bytes)} of RAM: CPU optimizer offload of a full fine-tune fits about "
            f"{params:.1f}B parameters ({OFFLOAD_BYTES_PER_PARAM} bytes each), less what loading the model takes",
            "use LoRA (only adapters are offloaded) or NVMe offload; a 7B full fine-tune with CPU offload "
            "wants about 128 GiB"))
    if hw.cgroup_memory_limit_bytes and hw.ram_host_bytes and hw.cgroup_memory_limit_bytes < hw.ram_host_bytes:
        out.append(Pitfall(
            "cgroup_limit", "info",
            f"this container may use {format_bytes(hw.cgroup_memory_limit_bytes)} of the machine's "
            f"{format_bytes(hw.ram_host_bytes)} RAM; plans are sized to the limit",
            "raise it (docker run --memory, the pod's memory limit) if offload needs more"))
    if hw.swap_total_bytes == 0 and hw.ram_total_bytes:
        out.append(Pitfall(
            "no_swap", "info",
            "no swap: a brief host-RAM peak (loading weights, saving a checkpoint) ends in the OOM killer "
            "instead of a slowdown",
            "on the host: sudo fallocate -l 32G /swapfile && sudo chmod 600 /swapfile && sudo mkswap "
            "/swapfile && sudo swapon /swapfile"))
    if hw.disks and not hw.nvme_disks:
        out.append(Pitfall("no_nvme", "info", "no NVMe drive among the mounted disks: NVMe offload would run "
                           "at the speed of a slower disk", "mount a local NVMe drive for --nvme-path"))
    for g in hw.gpus:
        if g.pcie_width and g.pcie_gen and (g.pcie_width < 16 or g.pcie_gen < 3):
            out.append(Pitfall("pcie_narrow", "info",
                               f"GPU {g.index} links at PCIe gen{g.pcie_gen} x{g.pcie_width}: CPU and NVMe "
                               "offload move every step's data over it", "use a full x16 slot for offload"))
    return out


def find_pitfalls(hw: Hardware, sw: Mapping[str, Any], env: Mapping[str, str]) -> list[Pitfall]:
    """Every known problem found, errors first. ``sw`` is the doctor probe's result ({} when not run)."""
    severe = bool(hw.gpus) or bool((sw.get("torch") or {}).get("cuda"))
    found = [p for p in [check_arch_list(env.get("TORCH_CUDA_ARCH_LIST"), severe)] if p]
    if sw:
        found += _torch_pitfalls(hw, sw) + _toolkit_pitfalls(hw, sw) + _deepspeed_pitfalls(hw, sw)
    found += _machine_pitfalls(hw)
    return sorted(found, key=lambda p: SEVERITIES.index(p.severity))
