"""``python -m zerotui.core.doctor.probe OUT.json``: import torch and DeepSpeed and write what they say.

``zerotui doctor`` runs this in a child process because a broken install does not always fail politely:
a CUDA library mismatch can abort or hang inside ``import torch``, and DeepSpeed prints its warnings
straight to stdout. In a child, any of that becomes a line in the report and doctor still finishes.

Each step is guarded on its own, so a broken DeepSpeed still reports torch, and the JSON is written
even when everything failed. Reads what ``ds_report`` reads (deepspeed/env_report.py): each op builder's
``is_compatible()``, the ``installed_ops`` table compiled into the wheel, and the JIT build cache.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from typing import Any

from zerotui.core.deepspeed.opbuild import build_root, put_interpreter_bin_on_path


def _error(err: BaseException) -> str:
    last = traceback.format_exception_only(type(err), err)[-1].strip()
    return last[:500]


def _torch(out: dict[str, Any]) -> Any:
    t0 = time.perf_counter()
    try:
        import torch
    except BaseException as err:  # ImportError, OSError from a missing libcudart, SystemExit, ...
        out["torch_error"] = _error(err)
        return None
    out["torch_import_s"] = round(time.perf_counter() - t0, 3)
    info: dict[str, Any] = {"version": torch.__version__, "cuda": getattr(torch.version, "cuda", None),
                            "hip": getattr(torch.version, "hip", None), "cudnn": None, "cuda_available": None,
                            "device_count": None}
    try:
        info["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except BaseException as err:
        info["cudnn_error"] = _error(err)
    if info["cuda"] or info["hip"]:
        try:
            # Counts devices without creating a CUDA context (torch uses cudaGetDeviceCount / NVML here).
            info["cuda_available"] = bool(torch.cuda.is_available())
            info["device_count"] = int(torch.cuda.device_count())
        except BaseException as err:
            info["cuda_error"] = _error(err)
    out["torch"] = info
    return torch


def _cuda_toolkit(out: dict[str, Any]) -> None:
    try:
        from torch.utils.cpp_extension import CUDA_HOME
    except BaseException as err:
        out["cuda_home_error"] = _error(err)
        return
    out["cuda_home"] = CUDA_HOME
    nvcc = os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME else shutil.which("nvcc")
    if nvcc and os.path.exists(nvcc):
        try:
            text = subprocess.run([nvcc, "-V"], capture_output=True, text=True, timeout=20).stdout
            words = text.replace(",", " ").split()
            out["nvcc_version"] = words[words.index("release") + 1] if "release" in words else None
        except (OSError, subprocess.SubprocessError, ValueError) as err:
            out["nvcc_error"] = _error(err)


def _deepspeed(out: dict[str, Any], torch: Any) -> None:
    t0 = time.perf_counter()
    try:
        import deepspeed
    except BaseException as err:
        out["deepspeed_error"] = _error(err)
        return
    out["deepspeed_import_s"] = round(time.perf_counter() - t0, 3)
    ds: dict[str, Any] = {"version": getattr(deepspeed, "__version__", None), "ops": {}}
    out["deepspeed"] = ds
    try:
        from deepspeed.accelerator import get_accelerator
        from deepspeed.git_version_info import accelerator_name, installed_ops, torch_info
        from deepspeed.ops.op_builder.all_ops import ALL_OPS

        runtime_acc = get_accelerator()._name
        ds["accelerator"] = runtime_acc
        ds["wheel_accelerator"] = accelerator_name
        ds["wheel_torch_info"] = dict(torch_info)
        root = build_root(torch) if torch is not None else None
        ds["jit_cache"] = root
        for name, builder in sorted(ALL_OPS.items()):
            entry: dict[str, Any] = {"installed": bool(installed_ops.get(name, False))
                                     and accelerator_name == runtime_acc}
            try:
                entry["compatible"] = bool(builder.is_compatible(False))
            except BaseException as err:  # DeepSpeed's own report treats a failing probe as incompatible
                entry["compatible"] = False
                entry["error"] = _error(err)
            entry["jit_built"] = bool(root) and os.path.exists(os.path.join(root, name, f"{name}.so"))
            ds["ops"][name] = entry
    except BaseException as err:
        ds["ops_error"] = _error(err)
    try:
        from deepspeed.ops.op_builder.builder import cuda_minor_mismatch_ok

        ds["cuda_minor_mismatch_ok"] = {str(k): list(v) for k, v in cuda_minor_mismatch_ok.items()}
    except BaseException:
        pass  # older DeepSpeed: doctor falls back to "majors must match"
    try:
        from torch.utils.cpp_extension import is_ninja_available

        out["ninja"] = bool(is_ninja_available())
    except BaseException as err:
        out["ninja_error"] = _error(err)


def _kernels(out: dict[str, Any], torch: Any) -> None:
    """Whether Liger's fused kernels would apply here (``kernels: auto``), and why not."""
    try:
        from zerotui.core.model.kernels import choose, liger_status

        gpu = bool(torch is not None and torch.cuda.is_available())
        ok, why, archs = liger_status()
        choice = choose("auto", "llama", 2, gpu)
        out["kernels"] = {"liger_importable": ok, "why_not": why or None, "architectures": len(archs),
                          "usable": choice.liger, "reason": choice.reason}
    except BaseException as err:
        out["kernels_error"] = _error(err)


def probe() -> dict[str, Any]:
    # A run puts the venv's bin (its ninja) on PATH before DeepSpeed builds anything; look the same way.
    put_interpreter_bin_on_path()
    out: dict[str, Any] = {"python": sys.version.split()[0], "executable": sys.executable}
    torch = _torch(out)
    if torch is not None:
        _cuda_toolkit(out)
    _deepspeed(out, torch)
    _kernels(out, torch)
    out["compiler"] = shutil.which("c++") or shutil.which("g++") or shutil.which("cc")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m zerotui.core.doctor.probe OUT.json\n")
        return 2
    try:
        result = probe()
    except BaseException as err:  # the file must be written whatever happened
        result = {"probe_error": _error(err)}
    with open(argv[0], "w", encoding="utf-8") as fh:
        json.dump(result, fh, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
