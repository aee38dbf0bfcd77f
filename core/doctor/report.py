"""``zerotui doctor``: the hardware, the software versions, DeepSpeed's ops and the known pitfalls found.

The report is a plain dict with stable keys (``--json`` prints it as is; ``SCHEMA`` grows only by adding
keys). torch and DeepSpeed are imported in a child process (doctor_probe.py): a broken install becomes a
pitfall in the report, never a traceback or a hung doctor.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Optional

from zerotui.core.hardware.detect import detect
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.doctor.pitfalls import Pitfall, find_pitfalls
from zerotui.core.sizes import format_bytes

SCHEMA = 1
PROBE_TIMEOUT_S = 180.0  # importing torch + DeepSpeed on a cold disk of a big GPU box takes tens of seconds
# Distributions whose versions are reported (metadata only: reading them imports nothing).
_PACKAGES = {"torch": "torch", "deepspeed": "deepspeed", "transformers": "transformers", "peft": "peft",
             "textual": "textual", "nvidia_ml_py": "nvidia-ml-py", "pydantic": "pydantic", "psutil": "psutil",
             "zerotui": "zerotui"}
# The ops users ask about, and what each is for in a fine-tune.
KEY_OPS = {"cpu_adam": "Adam on the CPU: optimizer offload", "fused_adam": "Adam on the GPU",
           "async_io": "NVMe offload (needs libaio)", "deepspeed_shm_comm": "shared-memory comm, CPU ranks",
           "pin_memory": "pinned buffers for offload"}


def _dist_version(name: str) -> Optional[str]:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def run_probe(env: Optional[Mapping[str, str]] = None, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """What torch and DeepSpeed report about themselves, from a child process; never raises."""
    fd, path = tempfile.mkstemp(prefix="zerotui-doctor-", suffix=".json")
    os.close(fd)
    argv = [sys.executable, "-m", "zerotui.core.doctor.probe", path]
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, env=dict(env) if env is not None else None, capture_output=True, text=True,
                              timeout=timeout_s, stdin=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        result = json.loads(text) if text.strip() else {}
        if not result:
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
            how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
            result = {"probe_error": f"importing torch/DeepSpeed ended the process ({how}): "
                                     + (" | ".join(tail) or "no output")}
    except subprocess.TimeoutExpired:
        result = {"probe_error": f"importing torch/DeepSpeed did not finish in {timeout_s:.0f} s"}
    except (OSError, ValueError) as err:
        result = {"probe_error": f"could not run the probe: {err}"}
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    result["probe_s"] = round(time.perf_counter() - started, 2)
    return result


def _versions(hw: Hardware, sw: Mapping[str, Any]) -> dict[str, Optional[str]]:
    v: dict[str, Optional[str]] = {"python": sys.version.split()[0]}
    v.update({key: _dist_version(dist) for key, dist in _PACKAGES.items()})
    torch = sw.get("torch") or {}
    if torch.get("version"):
        v["torch"] = torch["version"]  # what imports, which can differ from the metadata of a broken install
    if (sw.get("deepspeed") or {}).get("version"):
        v["deepspeed"] = sw["deepspeed"]["version"]
    cudnn = torch.get("cudnn")
    v["torch_cuda"] = torch.get("cuda")
    v["cudnn"] = f"{cudnn // 10000}.{cudnn // 100 % 100}.{cudnn % 100}" if isinstance(cudnn, int) and cudnn >= 10000 \
        else (str(cudnn) if cudnn else None)
    v["nvcc"] = sw.get("nvcc_version")
    v["driver"] = hw.driver_version or None
    v["cuda_driver"] = hw.cuda_driver_version or None
    return v


def collect(probe_software: bool = True, env: Optional[Mapping[str, str]] = None,
            hardware: Optional[Hardware] = None, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """The whole report. ``env`` replaces os.environ for the checks and the probe (tests inject pitfalls)."""
    started = time.perf_counter()
    env = dict(os.environ if env is None else env)
    hw = hardware if hardware is not None else detect()
    sw = run_probe(env, timeout_s) if probe_software else {}
    ds = sw.get("deepspeed") or {}
    pitfalls = find_pitfalls(hw, sw, env) + folder_pitfalls(env)
    return {
        "schema": SCHEMA,
        "ok": not any(p.severity == "error" for p in pitfalls),
        "hardware": hw.to_dict(),
        "versions": _versions(hw, sw),
        "deepspeed": {
            "importable": bool(ds),
            "error": sw.get("deepspeed_error") or sw.get("torch_error") or sw.get("probe_error"),
            "accelerator": ds.get("accelerator"),
            "ninja": sw.get("ninja"),
            "compiler": sw.get("compiler"),
            "cuda_home": sw.get("cuda_home"),
            "jit_cache": ds.get("jit_cache"),
            "ops": ds.get("ops") or {},
        },
        "kernels": sw.get("kernels") or ({"error": sw["kernels_error"]} if sw.get("kernels_error") else None),
        "pitfalls": [p.to_dict() for p in pitfalls],
        "data_cache": _data_cache(env),
        "memlock": _memlock(),
        "timings": {"probe_s": sw.get("probe_s"), "torch_import_s": sw.get("torch_import_s"),
                    "deepspeed_import_s": sw.get("deepspeed_import_s"),
                    "total_s": round(time.perf_counter() - started, 2)},
    }


def folder_problem(path: Path) -> Optional[str]:
    """Why zerotui could not make or write ``path`` (None when it can): the path, or the nearest of its
    parents that exists, is a file, or is not writable."""
    probe = path
    while not probe.exists() and not probe.is_symlink() and probe.parent != probe:
        probe = probe.parent
    if probe.is_symlink() and not probe.exists():
        return f"{probe} is a dangling link"
    if not probe.is_dir():
        return f"{probe} is a file, not a folder" if probe == path else f"{probe} (on its path) is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable by this user"
    return None


def folder_pitfalls(env: Mapping[str, str]) -> list[Pitfall]:
    """The runs folder and the cache ($ZEROTUI_RUNS_DIR, $ZEROTUI_CACHE_DIR or their defaults) must be
    folders zerotui can write: otherwise every `train` fails at its start (runs) or tokenises again each time."""
    from zerotui.core.paths import cache_root, default_runs_dir

    out = []
    for var, label, path, severity, what in (
            ("ZEROTUI_RUNS_DIR", "runs", default_runs_dir(), "error", "no run can start"),
            ("ZEROTUI_CACHE_DIR", "cache", cache_root(), "warning", "nothing can be cached (the built-in tiny model cannot start)")):
        if env.get(var):  # ``env`` may differ from os.environ (tests)
            path = Path(env[var]).expanduser()
        problem = folder_problem(path)
        if problem:
            out.append(Pitfall(f"{label}_dir_unusable", severity, f"the {label} folder {path}: {problem}, so {what}",
                               f"set {var} to a writable folder (or fix {path})"))
    return out


def _memlock() -> dict[str, Any]:
    """The locked-memory limit NVMe offload's swap buffers count against (core/deepspeed/memlock.py)."""
    import resource

    from zerotui.core.deepspeed.memlock import holds_ipc_lock

    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    unlimited = resource.RLIM_INFINITY
    return {"soft": None if soft == unlimited else soft, "hard": None if hard == unlimited else hard,
            "ipc_lock": holds_ipc_lock()}


def _data_cache(env: Mapping[str, str]) -> dict[str, Any]:
    """The tokenised-data cache: where, how much it holds, its bound (core/data/cache_bound.py)."""
    from zerotui.core.data import cache_bound
    from zerotui.core.errors import DataError
    from zerotui.core.paths import cache_root

    root = cache_root() / "tokenised"
    out: dict[str, Any] = {"path": str(root), "bytes": cache_bound.usage(root), "limit": None, "error": None}
    try:
        out["limit"] = cache_bound.limit(env)
    except DataError as err:
        out["error"] = f"{err.message}: {err.hint}"
    return out


# -- text ----------------------------------------------------------------------------------------------
def _kernel_lines(k: Optional[Mapping[str, Any]], width: int) -> list[str]:
    if not k:
        return []
    if k.get("error"):
        return ["", "Fused kernels"] + _row("Liger", f"not checked ({k['error']})", width)
    state = (f"usable: `kernels: auto` applies them ({k.get('architectures')} architectures)" if k.get("usable")
             else f"not used here: {k.get('reason')}")
    return ["", "Fused kernels"] + _row("Liger", state, width)


def _row(label: str, text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=f"  {label:<12} ", subsequent_indent=" " * 15,
                         break_on_hyphens=False) or [f"  {label}"]


def _gpu_lines(hw: Hardware, width: int) -> list[str]:
    if not hw.gpus:
        return _row("GPUs", f"none: {hw.nvml_error or 'NVML reports no GPU'}", width)
    # An 8-GPU node is eight identical lines; consecutive GPUs of one model share a row.
    groups: list[list[GpuInfo]] = []
    for g in hw.gpus:
        key = (g.name, g.total_bytes, g.compute_capability, g.pcie_gen, g.pcie_width, g.power_limit_w, g.error)
        prev = groups[-1][0] if groups else None
        same = prev is not None and key == (prev.name, prev.total_bytes, prev.compute_capability, prev.pcie_gen,
                                            prev.pcie_width, prev.power_limit_w, prev.error)
        groups[-1].append(g) if same else groups.append([g])
    lines = []
    for group in groups:
        g = group[0]
        frees = sorted({x.free_bytes for x in group})
        free = format_bytes(frees[0]) if len(frees) == 1 else f"{format_bytes(frees[0])}-{format_bytes(frees[-1])}"
        label = f"GPU {g.index}" if len(group) == 1 else f"GPU {g.index}-{group[-1].index}"
        count = f"{len(group)} x " if len(group) > 1 else ""
        lines += _row(label, f"{count}{g.name}, {format_bytes(g.total_bytes)} ({free} free)", width)
        bits = [f"compute {g.compute_capability[0]}.{g.compute_capability[1]}", "bf16" if g.bf16 else "no bf16"]
        if g.pcie_gen:
            bits.append(f"PCIe gen{g.pcie_gen} x{g.pcie_width}")
        if g.power_limit_w:
            bits.append(f"{g.power_limit_w:.0f} W limit")
        if g.error:
            bits.append(f"failed: {g.error}")
        lines += _row("", ", ".join(bits), width)
    lines += _row("driver", f"{hw.driver_version or '?'} (CUDA {hw.cuda_driver_version or '?'})", width)
    return lines


def _disk_lines(hw: Hardware, width: int) -> list[str]:
    lines = []
    for d in hw.disks:
        kind = "NVMe" if d.nvme else {True: "rotational", False: "SSD", None: "unknown kind"}[d.rotational]
        text = (f"{d.mountpoint} {format_bytes(d.free_bytes)} free of {format_bytes(d.total_bytes)}, {kind}, "
                f"{d.fstype} on {d.device}" + ("" if d.writable else ", read-only"))
        lines += _row("disk", text, width)
    return lines or _row("disks", "none found", width)


def render_text(report: Mapping[str, Any], width: int = 80) -> str:
    hw = Hardware.from_dict(report["hardware"])
    v = report["versions"]
    ds = report["deepspeed"]
    out = ["Hardware"]
    out += _gpu_lines(hw, width)
    out += _row("CPU", f"{hw.cpu_model or 'unknown CPU'}, {hw.cpu_cores} cores / {hw.cpu_threads} threads", width)
    ram = f"{format_bytes(hw.ram_total_bytes)} ({format_bytes(hw.ram_available_bytes)} available)"
    if hw.cgroup_memory_limit_bytes and hw.ram_host_bytes > hw.ram_total_bytes:
        ram += f", container limit of the machine's {format_bytes(hw.ram_host_bytes)}"
    out += _row("RAM", ram, width)
    out += _row("swap", format_bytes(hw.swap_total_bytes) if hw.swap_total_bytes else "none", width)
    out += _row("/dev/shm", f"{format_bytes(hw.shm_total_bytes)} ({format_bytes(hw.shm_free_bytes)} free)", width)
    out += _disk_lines(hw, width)
    dc = report.get("data_cache")
    if dc:
        bound = f"of {format_bytes(dc['limit'])}" if dc.get("limit") is not None else f"({dc.get('error')})"
        out += _row("data cache", f"{format_bytes(dc['bytes'])} {bound}, {dc['path']}", width)
    ml = report.get("memlock")
    if ml:
        def _lim(v: Any) -> str:
            return "unlimited" if v is None else format_bytes(v)
        locked = "any amount (CAP_IPC_LOCK)" if ml.get("ipc_lock") else f"{_lim(ml.get('hard'))} (ulimit -l)"
        out += _row("locked RAM", f"{locked}: NVMe offload's swap buffers", width)
    if hw.in_container:
        out += _row("container", "yes", width)
    out += ["", "Software"]
    torch = v.get("torch") or "not installed"
    if v.get("torch"):
        torch += f" (CUDA {v['torch_cuda']}, cuDNN {v.get('cudnn') or '-'})" if v.get("torch_cuda") else " (CPU build)"
    out += _row("python", v.get("python") or "?", width) + _row("torch", torch, width)
    for key in ("deepspeed", "transformers", "peft", "textual", "nvidia_ml_py"):
        out += _row(key.replace("_", "-"), v.get(key) or "not installed", width)
    if v.get("nvcc"):
        out += _row("nvcc", v["nvcc"], width)
    if ds.get("ops"):
        out += ["", f"DeepSpeed ops (accelerator {ds.get('accelerator')}, ninja {'yes' if ds.get('ninja') else 'no'})"]
        out += _row("JIT cache", str(ds.get("jit_cache")), width)
        ops = ds["ops"]
        for name, purpose in KEY_OPS.items():
            if name not in ops:
                continue
            op = ops[name]
            state = "pre-built" if op.get("installed") else "built (cache)" if op.get("jit_built") else \
                "builds on first use" if op.get("compatible") else "CANNOT BUILD"
            out.append(f"  {name:<19}{state:<21}{purpose}"[:width])
        others = [n for n in ops if n not in KEY_OPS]
        ok = sum(1 for n in others if ops[n].get("compatible") or ops[n].get("installed"))
        out.append(f"  ({len(others)} other ops: {ok} can build; `zerotui doctor --json` lists them)")
    elif ds.get("error"):
        out += ["", "DeepSpeed ops: not checked (DeepSpeed does not import)"]
    out += _kernel_lines(report.get("kernels"), width)
    pitfalls = report["pitfalls"]
    out += ["", f"Problems found: {len(pitfalls)}" if pitfalls else "No known problems found."]
    marks = {"error": "ERROR", "warning": "WARN", "info": "note"}
    for p in pitfalls:
        out += textwrap.wrap(p["message"], width=width, initial_indent=f"  {marks[p['severity']]:<5} ",
                             subsequent_indent=" " * 8)
        out += textwrap.wrap(p["fix"], width=width, initial_indent="        fix: ", subsequent_indent=" " * 13,
                             break_on_hyphens=False)
    timings = report.get("timings") or {}
    if timings.get("total_s") is not None:
        out += ["", f"(checked in {timings['total_s']:.1f} s)"]
    return "\n".join(out) + "\n"
