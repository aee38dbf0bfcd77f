"""core.events.history and core.run.overview: a run's history read from events.jsonl, whole or as it grows."""
from __future__ import annotations

import places
import json
import shutil

import numpy as np
import pytest

from zerotui.core.events.stream import encode, make_event, read_all
from zerotui.core.events.history import RunHistory
from zerotui.core.events.smoothing import ema as _ema
from zerotui.core.events.reader import EventFollower, load_history
from zerotui.core.run.overview import overview
from zerotui.core.run.folder import RunPaths, RunSummary

FIXTURES = places.FIXTURES / "events"


def _views(h: RunHistory) -> dict:
    return {name: s.view(120) for name, s in h.series.items()}


def test_reading_in_chunks_equals_applying_every_event_in_batches():
    path = FIXTURES / "live.jsonl"
    loaded, offset = load_history(path, chunk_bytes=4096)  # many chunks, lines cut across them
    assert offset == path.stat().st_size
    events = read_all(path)
    batched = RunHistory()
    for i in range(0, len(events), 37):
        batched.apply(events[i:i + 37])
    assert loaded.events == batched.events == len(events)
    assert loaded.current_step == batched.current_step == 600
    a, b = _views(loaded), _views(batched)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name].m, b[name].m, err_msg=name)
        for field in ("t", "lo", "hi", "last"):  # the smoothed loss may differ in the last bit, no more
            np.testing.assert_allclose(getattr(a[name], field), getattr(b[name], field), rtol=1e-12,
                                       err_msg=name)
    assert [e.text for e in loaded.log] == [e.text for e in batched.log]


def test_live_fixture_facts():
    h, _ = load_history(FIXTURES / "live.jsonl")
    assert h.total_steps == 3000 and h.current_step == 600
    assert h.steps_per_s() == pytest.approx(1 / 6.0)
    assert h.eta_s() == pytest.approx(2400 * 6.0)
    assert h.skipped_total == 6  # steps 97, 194, ... 582 overflowed
    assert h.gpu_indices == [0] and h.gpu_total[0] == 24 * 1024 ** 3
    assert h.last_checkpoint["step"] == 500 and h.checkpoints == 2
    assert h.series["eval_loss"].count == 6
    assert [a["kind"] for a in h.alerts] == ["loss_scale_collapse"]
    assert list(h.phases) == ["importing libraries", "loading model", "tokenising", "initialising DeepSpeed"]
    assert h.phase is None and h.finished is None
    assert any("loss_scale_collapse" in e.text and e.severity == "warning" for e in h.log)


def test_finished_and_failed_runs_keep_their_outcome_and_reason():
    done, _ = load_history(FIXTURES / "finished.jsonl")
    assert done.finished["state"] == "completed" and done.eta_s() is None
    assert done.elapsed_s(now=done.finished["t"] + 3600) == pytest.approx(done.finished["t"] - done.started_t)
    assert done.gpu_indices == [0, 1] and done.series["loss_scale"].latest is None  # bf16: no scale
    failed, _ = load_history(FIXTURES / "failed.jsonl")
    assert failed.finished["state"] == "failed"
    assert "CUDA out of memory" in failed.finished["reason"]
    assert failed.log[-1].severity == "error" and "out of memory" in failed.log[-1].text


def test_the_log_says_whether_nvml_saw_the_gpus_freed_after_a_multi_process_run():
    h, _ = load_history(FIXTURES / "live.jsonl")
    free = {"checked": True, "held": [], "note": "NVML shows no GPU memory held by the run's 2 process(es) on 2 GPU(s)"}
    h.apply([make_event("run_finished", t=h.last_t + 1, state="stopped", reason="stop requested", gpu_release=free)])
    assert [(e.severity, e.text) for e in h.log][-1] == ("information", free["note"])
    held = {"checked": True, "held": [{"gpu": 1, "pid": 42, "bytes": 1 << 30}],
            "note": "NVML shows GPU memory still held by the run: pid 42 on GPU 1"}
    h.apply([make_event("run_finished", t=h.last_t + 2, state="stopped", reason="again", gpu_release=held)])
    assert [(e.severity, e.text) for e in h.log][-1] == ("warning", held["note"])
    # A CPU machine has nothing to check: no line about GPUs.
    skipped = {"checked": False, "held": [], "note": "GPU memory check skipped: NVML is not available"}
    h.apply([make_event("run_finished", t=h.last_t + 3, state="completed", reason="", gpu_release=skipped)])
    assert h.log[-1].text == "run completed"


def test_a_resume_makes_a_finished_run_live_again():
    h, _ = load_history(FIXTURES / "finished.jsonl")
    t = h.last_t + 60
    ch = h.apply([make_event("run_started", t=t, plan={}, hardware={}, world_size=2, total_steps=960,
                             resumed_from="checkpoints/step480")])
    assert h.finished is None and h.resumes == 1 and h.total_steps == 960
    assert "state" in ch.groups and "resumed from checkpoints/step480" in ch.log[-1].text


def test_startup_phases_before_training():
    h, _ = load_history(FIXTURES / "startup.jsonl")
    assert h.step is None and h.phase == "tokenising"
    ph = h.phases["tokenising"]
    assert (ph.done, ph.total) == (750, 1000)


def test_torn_last_line_is_left_for_the_follower(tmp_path):
    path = tmp_path / "events.jsonl"
    full = (FIXTURES / "live.jsonl").read_bytes()
    cut = full.rfind(b"\n", 0, len(full) - 1) + 20  # 20 bytes into the last line
    path.write_bytes(full[:cut])
    h, offset = load_history(path)
    assert offset == full.rfind(b"\n", 0, len(full) - 1) + 1
    before = h.events
    follower = EventFollower(path, offset)
    assert follower.poll() == ([], False)  # still torn
    path.write_bytes(full)
    events, truncated = follower.poll()
    assert not truncated and len(events) == 1
    h.apply(events)
    assert h.events == before + 1 and follower.offset == len(full)


def test_follower_reports_a_truncated_file(tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copy(FIXTURES / "live.jsonl", path)
    _, offset = load_history(path)
    follower = EventFollower(path, offset)
    path.write_text(encode(make_event("log", t=1.0, message="new file")))
    assert follower.poll() == ([], True)
    assert follower.offset == 0
    events, truncated = follower.poll()
    assert not truncated and events[0]["message"] == "new file"


def test_bad_lines_and_odd_values_are_skipped_not_fatal(tmp_path):
    step = {"v": 1, "t": 10.0, "type": "step", "step": 1, "epoch": 0, "loss": "nan", "lr": None, "grad_norm": None,
            "loss_scale": None, "skipped": False, "samples_per_s": 1, "tokens_per_s": "inf", "tflops": None,
            "step_time": 1}
    lines = [
        json.dumps(step),
        "not json at all",
        "[1, 2, 3]",
        json.dumps({"type": "step", "step": 2}),                     # no time: cannot be placed
        json.dumps({**step, "t": 11.0, "step": 2, "loss": 2.5, "tokens_per_s": 100}),
        json.dumps({"v": 1, "t": 12.0, "type": "step", "step": 3}),  # missing fields: the slow path
        json.dumps({"v": 1, "t": 13.0, "type": "mystery"}),           # unknown type: counted, ignored
        json.dumps({"v": 1, "t": 14.0, "type": "telemetry", "gpus": [{"util": 50}, "x", {"index": 3, "util": 70}],
                    "cpu_percent": 5, "ram_used": 1, "ram_total": 2, "rss": 1}),
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    h, _ = load_history(path)
    assert h.current_step == 3
    loss = h.series["loss"]
    assert loss.count == 3 and loss.latest == 2.5
    tokens = h.series["tokens_per_s"].view(10)
    assert tokens.m.sum() == 3 and tokens.n.sum() == 1  # 'inf' and a missing value: counted, not drawn
    assert h.gpu_indices == [0, 3]
    assert h.series["gpu3.util"].latest == 70


def test_ema_matches_the_plain_recursion():
    rng = np.random.default_rng(1)
    x = rng.normal(size=1000)
    x[[5, 6, 300]] = np.nan
    y, state = _ema(x, None, 0.05)
    s, out = None, []
    for v in x:
        if np.isfinite(v):
            s = v if s is None else 0.95 * s + 0.05 * v
        out.append(np.nan if s is None else s)
    np.testing.assert_allclose(y, out, rtol=1e-9)
    assert state == pytest.approx(out[-1])
    # continuing from a state gives the same as one pass
    y1, s1 = _ema(x[:400], None, 0.05)
    y2, s2 = _ema(x[400:], s1, 0.05)
    np.testing.assert_allclose(np.r_[y1, y2], y, rtol=1e-9)


@pytest.mark.parametrize("fixture,state,step,total,reason", [
    ("finished.jsonl", "completed", 480, 480, "reached the last step"),
    ("failed.jsonl", "failed", 119, 2000, "CUDA out of memory"),
    ("live.jsonl", "running", 600, 3000, ""),
])
def test_run_overview_reads_only_the_ends(tmp_path, monkeypatch, fixture, state, step, total, reason):
    """A list of runs reads the head and the tail of each events file, never the middle: 2 MB of events
    planted between the halves (each a run_finished that names itself) would show if they were read.
    The windows are shrunk to fit these small files (a real run's file is 100 MB)."""
    import zerotui.core.run.overview as overview_module

    monkeypatch.setattr(overview_module, "HEAD_BYTES", 8 << 10)
    monkeypatch.setattr(overview_module, "TAIL_BYTES", 24 << 10)
    paths = RunPaths(tmp_path / "run")
    paths.root.mkdir()
    lines = (FIXTURES / fixture).read_text().splitlines(keepends=True)
    half = len(lines) // 2
    t = read_all(FIXTURES / fixture)[half]["t"]
    planted = json.dumps({"v": 1, "t": t, "type": "run_finished", "state": "failed", "reason": "MIDDLE"}) + "\n"
    middle = planted * (2 * 2**20 // len(planted))
    paths.events.write_text("".join(lines[:half]) + middle + "".join(lines[half:]))
    row = overview(RunSummary(paths, state, {"heartbeat": 5.0}))
    assert row.step == step and row.total_steps == total
    assert row.reason == reason if not reason else reason in row.reason
    assert "MIDDLE" not in row.reason
    assert row.started == read_all(FIXTURES / fixture)[0]["t"]
    assert row.loss is not None and row.tokens_per_s is not None
    assert row.duration_s(now=row.started + 10) == (10 if state == "running" else row.last_event - row.started)
