"""How long hardware detection, a telemetry sample and `zerotui doctor` take, and what they report, on
the machine this runs on (the H200 box, or this CPU machine).

    python -m benchmarks.hardware_timing OUT_DIR

Writes OUT_DIR/hardware_timing.json (timings, the detected hardware, CUDA_VISIBLE_DEVICES checks) and
OUT_DIR/doctor_*.txt / .json (doctor's output as users see it).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _fresh_detect(env: dict | None = None) -> dict:
    code = ("import time, sys, json; t = time.perf_counter(); from zerotui.core.hardware.detect import detect; "
            "hw = detect(); dt = time.perf_counter() - t; print(json.dumps({'s': dt, 'torch_imported': "
            "'torch' in sys.modules, 'hw': hw.to_dict()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def _median_ms(fn, n: int) -> dict:
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return {"median_ms": round(statistics.median(times), 3), "max_ms": round(max(times), 3), "n": n}


def main(out_dir: str) -> int:
    from zerotui.core.hardware.detect import detect, measure_write
    from zerotui.core.hardware.telemetry import TelemetrySampler

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result: dict = {"python": sys.version.split()[0], "env_TORCH_CUDA_ARCH_LIST": os.environ.get("TORCH_CUDA_ARCH_LIST")}
    fresh = [_fresh_detect() for _ in range(5)]
    result["detect_fresh_process_s"] = [round(f["s"], 4) for f in fresh]
    result["detect_imported_torch"] = any(f["torch_imported"] for f in fresh)
    result["hardware"] = fresh[-1]["hw"]
    result["detect_in_process"] = _median_ms(detect, 20)
    result["detect_no_disks_in_process"] = _median_ms(lambda: detect(probe_disks=False), 20)

    hw = detect(probe_disks=False)
    checks = {}
    env = dict(os.environ)
    if hw.gpus:
        uuid = hw.gpus[-1].uuid
        for value in ("0", uuid[:12], f"0,{len(hw.gpus) + 3}", ""):
            got = _fresh_detect({**env, "CUDA_VISIBLE_DEVICES": value})["hw"]
            checks[value] = {"nvml_indices": [g["nvml_index"] for g in got["gpus"]], "nvml_error": got["nvml_error"],
                             "notes": got["notes"]}
    result["cuda_visible_devices"] = checks

    with TelemetrySampler() as sampler:
        result["telemetry_sample"] = sampler.sample()
        result["telemetry_cost"] = _median_ms(sampler.sample, 200)
        result["telemetry_gpus"] = sampler.gpu_count

    for path in ("/tmp", str(Path.home())):
        try:
            probe = measure_write(path, 1 << 30)
            result.setdefault("write_probe", {})[path] = {"GB_per_s": round(probe.bytes_per_s / 1e9, 3),
                                                          "direct": probe.direct, "seconds": round(probe.seconds, 3)}
        except Exception as err:  # noqa: BLE001 - report it, this is a measurement script
            result.setdefault("write_probe", {})[path] = {"error": str(err)}

    doctor = [sys.executable, "-m", "zerotui.cli.main", "doctor"]
    for tag, arch in (("default_env", None), ("arch_9.0", "9.0")):
        denv = dict(env)
        if arch:
            denv["TORCH_CUDA_ARCH_LIST"] = arch
        t = time.perf_counter()
        text = subprocess.run(doctor, capture_output=True, text=True, env={**denv, "COLUMNS": "80"})
        result[f"doctor_{tag}_s"] = round(time.perf_counter() - t, 2)
        result[f"doctor_{tag}_rc"] = text.returncode
        (out / f"doctor_{tag}.txt").write_text(text.stdout + ("\n--- stderr ---\n" + text.stderr if text.stderr else ""))
    js = subprocess.run(doctor + ["--json"], capture_output=True, text=True, env=env)
    (out / "doctor.json").write_text(js.stdout or js.stderr)
    (out / "hardware_timing.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "hardware"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results"))
