"""TelemetrySampler: the shape of a sample (it becomes a `telemetry` event), that it never blocks, the process-tree RSS,
NVMe usage, and that failures give nulls instead of exceptions."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from nvml_fake import H100, NVMLError, fake  # noqa: E402

from zerotui.core.events.stream import make_event, validate  # noqa: E402
from zerotui.core.hardware.telemetry import TelemetrySampler  # noqa: E402

KEYS = {"gpus", "cpu_percent", "ram_used", "ram_total", "rss", "rss_file", "nvme_bytes"}
GPU_KEYS = {"index", "util", "mem_used", "mem_total", "power_w", "temp_c"}


@pytest.fixture(autouse=True)
def _all_devices_visible(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_sample_shape_on_this_machine_is_a_valid_event():
    with TelemetrySampler() as s:
        sample = s.sample()
    assert set(sample) == KEYS
    assert isinstance(sample["cpu_percent"], float) and 0 <= sample["cpu_percent"] <= 100 * psutil.cpu_count()
    assert 0 < sample["ram_used"] < sample["ram_total"]
    assert sample["rss"] >= psutil.Process().memory_info().rss // 2
    assert sample["nvme_bytes"] is None  # no nvme_path given
    assert validate(make_event("telemetry", **sample)) == []


def test_sample_never_blocks_for_a_cpu_measurement(monkeypatch):
    # psutil.cpu_percent(interval=x) sleeps x seconds inside the training loop; the sampler must use the
    # non-blocking form. Its cost per call is measured by benchmarks/worker_overhead.py, not asserted here.
    with TelemetrySampler() as s:
        def no_sleep(seconds):
            raise AssertionError(f"sample() slept {seconds} s")

        monkeypatch.setattr(time, "sleep", no_sleep)
        first, second = s.sample(), s.sample()
    assert 0.0 <= first["cpu_percent"] and 0.0 <= second["cpu_percent"]


def test_rss_sums_the_process_tree():
    # A real child holding 300 MB, like a DeepSpeed rank under the launcher.
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, time; b = bytearray(300 << 20); sys.stdout.write('ok\\n'); "
                              "sys.stdout.flush(); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ok"
        own = psutil.Process().memory_info().rss
        with TelemetrySampler(children_refresh_s=0) as s:
            rss = s.sample()["rss"]
        assert rss >= own + (300 << 20) * 0.9
    finally:
        child.kill()
        child.wait()
    with TelemetrySampler(children_refresh_s=0) as s:  # the child is gone: counted no more
        assert s.sample()["rss"] < own + (300 << 20) * 0.5


def test_file_pages_a_run_maps_are_told_apart_from_its_own_memory(tmp_path):
    # A model's safetensors are read through a mapping: their pages count in RSS while mapped, but they
    # are the file's (the kernel can drop them), not memory the run allocated. A child maps 300 MB of a
    # file and touches it, then allocates 200 MB of its own and 100 MB of shared memory that maps no file
    # (as CUDA's pinned buffers: Linux counts them as "shared" with the files, psutil too, and on the H200
    # that took 20 GiB of an offload run's own memory for file pages).
    data = tmp_path / "weights.bin"
    data.write_bytes(b"\1" * (300 << 20))
    code = ("import mmap, sys, time\n"
            f"f = open({str(data)!r}, 'rb'); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n"
            "total = sum(m[i] for i in range(0, len(m), 4096))\n"
            "own = bytearray(200 << 20)\n"
            "pinned = mmap.mmap(-1, 100 << 20, flags=mmap.MAP_SHARED)\n"
            "for i in range(0, len(pinned), 4096): pinned[i] = 1\n"
            "sys.stdout.write('ok\\n'); sys.stdout.flush(); time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ok"
        with TelemetrySampler(root_pid=child.pid, children_refresh_s=0) as s:
            sample = s.sample()
        rss, file_pages = sample["rss"], sample["rss_file"]
        assert file_pages >= (300 << 20) * 0.9                   # the mapped file is file pages
        assert rss - file_pages >= (300 << 20) * 0.9             # the bytearray and the shared memory are its own
        assert rss - file_pages < (300 << 20) + (150 << 20)      # and the file is not counted as its own
        assert validate(make_event("telemetry", **sample)) == []
    finally:
        child.kill()
        child.wait()


def test_a_fork_that_has_not_exec_d_is_not_counted_twice():
    # What every subprocess call is for a moment (fork, then exec): a copy whose resident pages are its
    # parent's. A process holding 300 MB forks without exec'ing; the tree holds those pages once.
    code = ("import os, sys, time; b = bytearray(300 << 20)\n"
            "if os.fork() == 0:\n    time.sleep(60); os._exit(0)\n"
            "sys.stdout.write('ok\\n'); sys.stdout.flush(); time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ok"
        tree = psutil.Process(parent.pid)
        fork = tree.children()[0]
        assert fork.cmdline() == tree.cmdline() and fork.memory_info().rss > (300 << 20) * 0.9
        with TelemetrySampler(root_pid=parent.pid, children_refresh_s=0) as s:
            rss = s.sample()["rss"]
        assert (300 << 20) * 0.9 < rss < tree.memory_info().rss + (100 << 20)
    finally:
        for p in psutil.Process(parent.pid).children():
            p.kill()
        parent.kill()
        parent.wait()


def test_nvme_bytes_refresh_in_background(tmp_path):
    (tmp_path / "swap").mkdir()
    (tmp_path / "swap" / "optimizer_0.swp").write_bytes(b"\1" * (3 << 20))
    (tmp_path / "params.swp").write_bytes(b"\1" * (1 << 20))
    with TelemetrySampler(nvme_path=str(tmp_path), nvme_refresh_s=0) as s:
        deadline = time.monotonic() + 5
        value = s.sample()["nvme_bytes"]
        while value is None and time.monotonic() < deadline:
            time.sleep(0.01)
            value = s.sample()["nvme_bytes"]
        assert value is not None and (4 << 20) <= value < (5 << 20)
    with TelemetrySampler(nvme_path=str(tmp_path / "not-yet"), nvme_refresh_s=0) as s:
        s.sample()
        s._nvme_thread.join(5)
        assert s.sample()["nvme_bytes"] == 0  # DeepSpeed has not created its folder yet


def test_gpus_from_fake_nvml_one_query_failing(monkeypatch):
    nvml = fake(H100, dict(H100, fail={"nvmlDeviceGetTemperature": NVMLError("Not Supported"),
                                       "nvmlDeviceGetPowerUsage": RuntimeError("unexpected")}))
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    s = TelemetrySampler()
    gpus = s.sample()["gpus"]
    assert [set(g) for g in gpus] == [GPU_KEYS, GPU_KEYS]
    assert gpus[0] == {"index": 0, "util": 37.0, "mem_used": 1 << 30, "mem_total": 80 << 30, "power_w": 123.456,
                       "temp_c": 55.0}
    assert gpus[1]["temp_c"] is None and gpus[1]["power_w"] is None and gpus[1]["util"] == 37.0
    assert nvml.inits == 1
    s.sample()
    assert nvml.inits == 1  # NVML opened once, not per sample
    s.close()
    assert nvml.shutdowns == 1


def test_gpu_subset_and_visible_devices(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake(H100, H100, H100))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,1")
    with TelemetrySampler(gpu_indices=[1]) as s:
        assert [g["index"] for g in s.sample()["gpus"]] == [1]  # cuda:1 is NVML GPU 1 here
        assert s._gpus[0].nvml_index == 1
    with TelemetrySampler() as s:
        assert [g["index"] for g in s.sample()["gpus"]] == [0, 1]


def test_no_nvml_and_psutil_failures_give_nulls(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)

    def boom(*a, **k):
        raise OSError("/proc is gone")
    with TelemetrySampler() as s:
        monkeypatch.setattr(psutil, "virtual_memory", boom)
        monkeypatch.setattr(psutil, "cpu_percent", boom)
        sample = s.sample()
    assert sample["gpus"] == [] and sample["ram_used"] is None and sample["ram_total"] is None
    assert sample["cpu_percent"] is None and sample["rss"] > 0
    with TelemetrySampler(root_pid=2**22 + 12345) as s:  # a pid that does not exist
        assert s.sample()["rss"] is None
