"""`zerotui doctor`: on this real machine (no GPU, real torch + DeepSpeed), with a pitfall injected, with
broken installs simulated in the probe's child process, and each pitfall rule with its situation."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zerotui.core.doctor.report import collect, render_text, run_probe
from zerotui.core.hardware.types import DiskInfo, GpuInfo, Hardware
from zerotui.core.doctor.pitfalls import check_arch_list, find_pitfalls

GiB = 1 << 30
ZEROTUI = [sys.executable, "-m", "zerotui.cli.main"]


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "COLUMNS": "80", **env}
    return subprocess.run(ZEROTUI + args, capture_output=True, text=True, env=full_env, timeout=300)


@pytest.fixture(scope="module")
def doctor_json() -> dict:
    proc = _run(["doctor", "--json"])
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


# -- the real machine --------------------------------------------------------------------------------
def test_json_has_stable_keys_and_real_findings(doctor_json):
    r = doctor_json
    assert set(r) >= {"schema", "ok", "hardware", "versions", "deepspeed", "pitfalls", "timings"}
    assert r["schema"] == 1
    assert set(r["versions"]) >= {"python", "torch", "torch_cuda", "cudnn", "deepspeed", "transformers", "peft",
                                  "textual", "nvidia_ml_py", "driver", "cuda_driver", "nvcc"}
    import deepspeed  # noqa: F401 - the report must agree with what this venv really has
    import torch

    assert r["versions"]["torch"] == torch.__version__ and r["versions"]["torch_cuda"] == torch.version.cuda
    assert r["versions"]["deepspeed"] == deepspeed.__version__
    ops = r["deepspeed"]["ops"]
    assert {"cpu_adam", "fused_adam", "async_io"} <= set(ops)
    assert all(set(op) >= {"installed", "compatible", "jit_built"} for op in ops.values())
    for p in r["pitfalls"]:
        assert set(p) == {"id", "severity", "message", "fix"} and p["fix"]
    ids = {p["id"] for p in r["pitfalls"]}
    # libaio: the pitfall is there exactly when DeepSpeed's own probe says async_io cannot build
    assert ("libaio_missing" in ids) == (not ops["async_io"]["compatible"] and not ops["async_io"]["installed"])
    if not r["hardware"]["gpus"]:
        assert "no_gpu" in ids and r["hardware"]["nvml_error"]
    assert r["ok"] == (not any(p["severity"] == "error" for p in r["pitfalls"]))


def test_text_in_80_columns_with_injected_arch_list_pitfall():
    proc = _run(["doctor"], TORCH_CUDA_ARCH_LIST="8.0;9.0a")
    assert "Traceback" not in proc.stdout + proc.stderr
    out = proc.stdout
    assert all(len(line) <= 80 for line in out.splitlines()), max(out.splitlines(), key=len)
    assert "Hardware" in out and "Software" in out and "DeepSpeed ops" in out
    assert "cpu_adam" in out
    flat = " ".join(out.split())  # messages wrap at 80 columns
    assert "invalid literal for int() with base 10: '0a'" in flat
    assert 'fix: export TORCH_CUDA_ARCH_LIST="8.0;9.0"' in flat
    if not Path("/dev/nvidia0").exists():
        assert "no NVIDIA GPU visible" in flat  # said plainly, not as an error
        assert proc.returncode == 0             # on a CPU machine a bad arch list is a warning


def test_no_software_is_fast_and_skips_the_probe():
    proc = _run(["doctor", "--no-software", "--json"])
    r = json.loads(proc.stdout)
    assert r["deepspeed"]["ops"] == {} and r["timings"]["probe_s"] is None
    assert r["timings"]["total_s"] < 1.0


def test_bad_write_test_path_is_one_line_exit_2(tmp_path):
    proc = _run(["doctor", "--no-software", "--write-test", str(tmp_path / "missing")])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "does not exist" in proc.stderr
    proc = _run(["doctor", "--no-software", "--write-test", str(tmp_path), "--write-size", "lots"])
    assert proc.returncode == 2 and "--write-size" in proc.stderr


# -- broken installs, simulated by a fake `torch` module first on the child's path -----------------------
def _probe_with_fake_torch(tmp_path: Path, body: str) -> dict:
    (tmp_path / "torch.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return run_probe(env, timeout_s=60)


def test_torch_import_error_is_reported(tmp_path):
    sw = _probe_with_fake_torch(tmp_path, "raise ImportError('libcudart.so.12: cannot open shared object file')")
    assert "libcudart.so.12" in sw["torch_error"]
    hw = Hardware(ram_total_bytes=64 * GiB, swap_total_bytes=1)
    (p,) = [p for p in find_pitfalls(hw, sw, {}) if p.id == "torch_import"]
    assert p.severity == "error" and "libcudart" in p.message


def test_crashing_import_is_reported_not_fatal(tmp_path):
    sw = _probe_with_fake_torch(tmp_path, "import os\nos.abort()\n")
    assert "signal 6" in sw["probe_error"]
    report = collect(probe_software=False, hardware=Hardware(), env={})
    report["pitfalls"] = [p.to_dict() for p in find_pitfalls(Hardware(), sw, {})]
    assert "probe_failed" in {p["id"] for p in report["pitfalls"]}
    assert "ERROR" in render_text(report)


# -- pitfall rules --------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _locking_unlimited(monkeypatch):
    """The account's real locked-memory limit stays out of the expected pitfalls (root holds CAP_IPC_LOCK; a
    user's limit is usually 8 MiB): the test that is about it sets it."""
    from zerotui.core.deepspeed import memlock

    monkeypatch.setattr(memlock, "allowance", lambda: None)


def gpu_box(n: int = 1, **kw) -> Hardware:
    gpus = [GpuInfo(index=i, name="NVIDIA H100", total_bytes=80 * GiB, free_bytes=80 * GiB,
                    compute_capability=(9, 0), bf16=True, pcie_gen=5, pcie_width=16) for i in range(n)]
    base = dict(gpus=gpus, ram_total_bytes=512 * GiB, ram_host_bytes=512 * GiB, swap_total_bytes=GiB,
                shm_total_bytes=64 * GiB, driver_version="550.54.15", cuda_driver_version="12.4",
                disks=[DiskInfo("/dev/nvme0n1p1", "/", "ext4", 1 << 40, 1 << 40, nvme=True, rotational=False)])
    base.update(kw)
    return Hardware(**base)


def sw_ok(cuda: str | None = "12.4", nvcc: str | None = "12.4", installed: bool = False, **kw) -> dict:
    ops = {n: {"installed": installed, "compatible": True, "jit_built": False}
           for n in ("cpu_adam", "fused_adam", "async_io")}
    sw = {"torch": {"version": "2.5.1", "cuda": cuda, "cuda_available": True}, "cuda_home": "/usr/local/cuda",
          "nvcc_version": nvcc, "ninja": True, "compiler": "/usr/bin/c++",
          "deepspeed": {"version": "0.19.8", "ops": ops,
                        "cuda_minor_mismatch_ok": {"12": ["12.0", "12.1", "12.4", "12.6"]}}}
    sw.update(kw)
    return sw


def ids(hw: Hardware, sw: dict, env: dict | None = None) -> dict[str, str]:
    return {p.id: p.severity for p in find_pitfalls(hw, sw, env or {})}


def test_healthy_gpu_box_has_no_pitfalls():
    assert ids(gpu_box(8), sw_ok()) == {}


@pytest.mark.parametrize("value, fixed", [
    ("8.0;9.0a", "8.0;9.0"), ("9.0a", "9.0"), ("8.6 9.0a+PTX", "8.6;9.0+PTX"), ("sm_90", "9.0"),
    ("10.0f;12.0a", "10.0;12.0"),
])
def test_arch_list_fixes(value, fixed):
    p = check_arch_list(value, severe=True)
    assert p.severity == "error" and p.fix == f'export TORCH_CUDA_ARCH_LIST="{fixed}"'


@pytest.mark.parametrize("value", [None, "", "8.0;9.0", "7.0 8.0 9.0+PTX"])
def test_arch_list_good_values(value):
    assert check_arch_list(value, severe=True) is None


def test_cpu_torch_on_gpu_machine():
    found = find_pitfalls(gpu_box(), sw_ok(cuda=None), {})
    (p,) = [p for p in found if p.id == "torch_cpu_build"]
    assert p.severity == "error" and "download.pytorch.org" in p.fix


def test_no_cuda_toolkit_only_matters_when_ops_must_be_built():
    assert ids(gpu_box(), sw_ok(nvcc=None, cuda_home=None))["no_cuda_toolkit"] == "error"
    assert "no_cuda_toolkit" not in ids(gpu_box(), sw_ok(nvcc=None, cuda_home=None, installed=True))


def test_cuda_toolkit_mismatch_follows_deepspeeds_rule():
    assert ids(gpu_box(), sw_ok(cuda="12.4", nvcc="11.8"))["cuda_toolkit_mismatch"] == "error"
    assert "cuda_toolkit_mismatch" not in ids(gpu_box(), sw_ok(cuda="12.4", nvcc="12.1"))  # DeepSpeed accepts
    assert "cuda_toolkit_mismatch" in ids(gpu_box(cuda_driver_version="13.0"), sw_ok(cuda="13.0", nvcc="13.1"))


def test_driver_older_than_torch_cuda():
    assert ids(gpu_box(cuda_driver_version="11.8"), sw_ok(cuda="12.4"))["driver_too_old"] == "error"
    assert ids(gpu_box(cuda_driver_version="12.2"), sw_ok(cuda="12.4"))["driver_too_old"] == "warning"


def test_deepspeed_import_failure_and_missing():
    broken = ids(gpu_box(), {"torch": {"version": "2.5.1", "cuda": "12.4"},
                             "deepspeed_error": "AttributeError: module 'torch' has no attribute 'xyz'"})
    assert broken["deepspeed_import"] == "error"
    assert ids(gpu_box(), {"torch": {"version": "2.5.1", "cuda": "12.4"},
                           "deepspeed_error": "ModuleNotFoundError: No module named 'deepspeed'"}) \
        == {"deepspeed_missing": "error"}


def test_libaio_ninja_compiler():
    sw = sw_ok()
    sw["deepspeed"]["ops"]["async_io"]["compatible"] = False
    assert ids(gpu_box(), sw)["libaio_missing"] == "warning"
    assert ids(gpu_box(), sw_ok(ninja=False))["no_ninja"] == "error"
    assert ids(gpu_box(), sw_ok(compiler=None))["no_compiler"] == "error"
    assert "no_ninja" not in ids(gpu_box(), sw_ok(ninja=False, installed=True))


def test_small_shm_is_an_error_only_with_several_gpus():
    docker_default = 64 * 10**6
    assert ids(gpu_box(8, shm_total_bytes=docker_default), sw_ok())["shm_small"] == "error"
    assert ids(gpu_box(1, shm_total_bytes=docker_default), sw_ok())["shm_small"] == "warning"
    p = next(p for p in find_pitfalls(gpu_box(8, shm_total_bytes=docker_default), sw_ok(), {}) if p.id == "shm_small")
    assert "--shm-size" in p.fix


def test_ram_swap_container_nvme_pcie():
    hw = gpu_box(ram_total_bytes=16 * GiB, ram_host_bytes=256 * GiB, cgroup_memory_limit_bytes=16 * GiB,
                 swap_total_bytes=0, disks=[DiskInfo("/dev/sda1", "/", "ext4", 1 << 40, 1 << 40, rotational=True)])
    hw.gpus[0].pcie_width = 8
    found = ids(hw, sw_ok())
    assert found == {"low_ram": "warning", "cgroup_limit": "info", "no_swap": "info", "no_nvme": "info",
                     "pcie_narrow": "info"}


def test_errors_sort_first_and_render_fits_80_columns():
    hw = gpu_box(2, shm_total_bytes=64 * 10**6, swap_total_bytes=0)
    sw = sw_ok(cuda=None)
    pitfalls = find_pitfalls(hw, sw, {"TORCH_CUDA_ARCH_LIST": "9.0a"})
    severities = [p.severity for p in pitfalls]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
    report = collect(probe_software=False, hardware=hw, env={"TORCH_CUDA_ARCH_LIST": "9.0a"})
    assert report["ok"] is False
    text = render_text(report)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "GPU 0-1      2 x NVIDIA H100, 80.0 GiB" in text and "PCIe gen5 x16" in text and "ERROR" in text


def test_the_data_cache_is_reported_with_its_size_and_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path))
    (tmp_path / "tokenised" / "set-a").mkdir(parents=True)
    (tmp_path / "tokenised" / "set-a" / "train.ids.npy").write_bytes(b"\1" * (3 << 20))
    hw = Hardware(cpu_cores=2, cpu_threads=2)
    r = collect(probe_software=False, env={"ZEROTUI_CACHE_MAX": "50GB"}, hardware=hw)
    dc = r["data_cache"]
    assert dc["path"] == str(tmp_path / "tokenised") and 3 << 20 <= dc["bytes"] < 4 << 20
    assert dc["limit"] == 50 * 10**9 and dc["error"] is None
    assert "data cache   3.0 MiB of 46.6 GiB" in render_text(r)
    bad = collect(probe_software=False, env={"ZEROTUI_CACHE_MAX": "lots"}, hardware=hw)["data_cache"]
    assert bad["limit"] is None and "ZEROTUI_CACHE_MAX='lots' is not a size" in bad["error"]


def test_a_locked_memory_limit_too_low_for_nvme_offload_is_a_note(monkeypatch):
    from zerotui.core.deepspeed import memlock

    monkeypatch.setattr(memlock, "allowance", lambda: 8 << 20)  # systemd's default for a user
    p = next(p for p in find_pitfalls(gpu_box(), sw_ok(), {}) if p.id == "memlock_low")
    assert p.severity == "info" and "8.0 MiB" in p.message and "memlock unlimited" in p.fix
    monkeypatch.setattr(memlock, "allowance", lambda: None)  # unlimited, or CAP_IPC_LOCK (root)
    assert "memlock_low" not in ids(gpu_box(), sw_ok())
    sw = sw_ok()
    sw["deepspeed"]["ops"]["async_io"]["compatible"] = False  # no NVMe offload here at all: libaio says it
    monkeypatch.setattr(memlock, "allowance", lambda: 8 << 20)
    assert "memlock_low" not in ids(gpu_box(), sw)


def test_the_locked_memory_limit_is_reported():
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    hard = 8 << 20 if hard == resource.RLIM_INFINITY else min(hard, 8 << 20)  # lowering needs no privilege
    code = ("import json, resource\nfrom zerotui.core.doctor.report import collect, render_text\n"
            "from zerotui.core.hardware.types import Hardware\n"
            f"resource.setrlimit(resource.RLIMIT_MEMLOCK, ({min(64 << 10, hard)}, {hard}))\n"
            "r = collect(probe_software=False, hardware=Hardware(cpu_cores=2, cpu_threads=2))\n"
            "print(json.dumps(r['memlock'])); print(render_text(r))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    memlock = json.loads(out.splitlines()[0])
    assert (memlock["soft"], memlock["hard"]) == (min(64 << 10, hard), hard)
    from zerotui.core.sizes import format_bytes

    text = ("locked RAM   any amount (CAP_IPC_LOCK)" if memlock["ipc_lock"]
            else f"locked RAM   {format_bytes(hard)} (ulimit -l)")
    assert text in out


def test_runs_or_cache_folder_that_is_a_file_is_reported(tmp_path):
    """ZEROTUI_RUNS_DIR / ZEROTUI_CACHE_DIR pointing at a file: doctor said nothing while every run failed."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    env = {"ZEROTUI_RUNS_DIR": str(a_file / "runs"), "ZEROTUI_CACHE_DIR": str(a_file)}
    report = collect(probe_software=False, hardware=Hardware(), env=env)
    found = {p["id"]: p for p in report["pitfalls"]}
    assert found["runs_dir_unusable"]["severity"] == "error" and not report["ok"]
    assert "is not a folder" in found["runs_dir_unusable"]["message"]
    assert "is a file" in found["cache_dir_unusable"]["message"]
    assert "ZEROTUI_CACHE_DIR" in found["cache_dir_unusable"]["fix"]
    ok = collect(probe_software=False, hardware=Hardware(), env={"ZEROTUI_RUNS_DIR": str(tmp_path / "new" / "runs"),
                                                                "ZEROTUI_CACHE_DIR": str(tmp_path)})
    assert not any(p["id"].endswith("_dir_unusable") for p in ok["pitfalls"])


# -- --write-test: a test of a folder, said as one ---------------------------------------------------
def _write_test(capsys, target, size="1MiB"):
    from cli_capture import run

    return run(capsys, "doctor", "--no-software", "--no-disks", "--write-test", str(target), "--write-size", size)


def test_write_test_of_a_file_says_it_is_a_file(tmp_path, capsys):
    a_file = tmp_path / "data.bin"
    a_file.write_text("x")
    code, out, err = _write_test(capsys, a_file)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"{a_file} is a file, not a folder" in err and f"--write-test {tmp_path}" in err
    assert "NVMe" not in err and a_file.read_text() == "x"


def test_write_test_refusals_speak_of_the_folder(tmp_path, capsys, monkeypatch):
    import errno

    import zerotui.core.hardware.disks as disks

    code, _, err = _write_test(capsys, tmp_path / "missing")
    assert code == 2 and "the folder does not exist" in err and "NVMe" not in err
    code, _, err = _write_test(capsys, tmp_path, "1000000TiB")
    assert code == 2 and "free; the write test writes" in err and "NVMe" not in err

    def full(fd, data):  # the drive fills during the test itself, after the folder was checked
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(disks.os, "write", full)
    code, _, err = _write_test(capsys, tmp_path)
    assert code == 2 and f"the folder {tmp_path} filled up during the write test" in err and "NVMe" not in err
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind


def test_write_test_of_a_folder_measures_it(tmp_path, capsys):
    code, out, err = _write_test(capsys, tmp_path)
    assert code in (0, 1) and "Write test: " in out and f" to {tmp_path} (" in out
    assert list(tmp_path.iterdir()) == []
