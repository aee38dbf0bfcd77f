"""The memory-pressure alert (core/train/alloc_release.py) on the allocator's retry counts two GPU runs
logged (benchmarks/results/seed-scenarios-caprel*-h100-2026-12-06.json): one released at every step and
ran 23% slower, the other once, at its first step, at full speed."""
import json
from pathlib import Path

from zerotui.core.train.alloc_release import ReleaseWatch

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _logged(file: str, scenario: str) -> tuple[list[int], list[int]]:
    r = json.loads((RESULTS / file).read_text())["scenarios"][scenario]
    steps = list(range(r["plan"]["log_interval"], r["steps"] * r["plan"]["log_interval"] + 1, r["plan"]["log_interval"]))
    return r["alloc_retries"], steps


def _alerts(retries: list, steps: list[int], watch: ReleaseWatch) -> list[tuple[int, dict]]:
    return [(s, a) for n, s in zip(retries, steps) if (a := watch.check(n, s))]


def test_a_run_releasing_at_every_step_is_told_once_with_the_step_it_began():
    retries, steps = _logged("seed-scenarios-caprel1-h100-2026-12-06.json", "1b-full-ho23")
    assert retries == [3, 4, 7, 11, 15, 19]  # the run under 26 GiB
    alerts = _alerts(retries, steps, ReleaseWatch())
    assert len(alerts) == 1
    step, alert = alerts[0]
    assert step == steps[2] and alert["kind"] == "memory_pressure"
    assert f"since step {steps[0]}" in alert["message"] and "19" not in alert["message"]
    assert "7 times in all" in alert["message"]
    assert "--micro-batch" in alert["hint"] and "--gpu-mem-cap" in alert["hint"]


def test_one_release_at_the_first_step_and_a_run_with_room_raise_nothing():
    for file, scenario in (("seed-scenarios-caprel3-h100-2026-12-06.json", "3b-full-ho84"),
                           ("seed-scenarios-caprel2-h100-2026-12-06.json", "1b-full-ho23")):
        retries, steps = _logged(file, scenario)
        assert max(retries) <= 1
        assert _alerts(retries, steps, ReleaseWatch()) == []


def test_no_cuda_device_no_count_no_alert():
    watch = ReleaseWatch()
    assert all(watch.check(None, s) is None for s in range(1, 20))


def test_the_alert_comes_back_only_after_as_many_quiet_intervals():
    watch = ReleaseWatch(sustained=3)
    counts = [1, 2, 3,      # alert at the third rising interval
              4, 5,         # still releasing: no repeat
              5, 5,         # two quiet intervals: not yet re-armed
              6, 7, 8,      # rising again without three quiet ones between: no repeat
              8, 8, 8,      # three quiet: re-armed
              9, 10, 11]    # a second alert
    fired = [i for i, n in enumerate(counts) if watch.check(n, i + 1)]
    assert fired == [2, 15]


def test_a_pause_in_the_releases_restarts_the_count():
    watch = ReleaseWatch(sustained=3)
    assert [watch.check(n, i) for i, n in enumerate([2, 4, 4, 6, 8])] == [None] * 5
    assert watch.check(9, 6) is not None
