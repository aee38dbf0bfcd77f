"""The supervisor's final status takes step, loss and tokens/s together from the run's newest step report,
as `zerotui runs` does (``overview.latest_progress``), and a step report that a resume redid does not
count (core/events/superseded.py). Before, the status kept the last heartbeat's loss and speed beside the
newest step event's step, and a killed resumed worker's end named the step its predecessor had reached."""
from __future__ import annotations

import time

from run_events import events

from zerotui.core.events.stream import EventWriter
from zerotui.core.events.superseded import superseded_flags
from zerotui.core.plan.schema import Plan
from zerotui.core.run import supervisor as sup_mod
from zerotui.core.run.folder import new_run_dir, read_status, summarise, write_status
from zerotui.core.run.overview import latest_progress
from zerotui.core.run.rank_records import record_end, record_start

SIGKILL_STATUS = 9  # a wait status: killed by SIGKILL


def step(w, n, loss, speed):
    w.emit("step", step=n, epoch=n / 100, loss=loss, lr=1e-3, grad_norm=1.0, loss_scale=None, skipped=0,
           samples_per_s=1.0, tokens_per_s=speed, tflops=None, step_time=0.1)


def started(w, start_step):
    w.emit("run_started", plan={}, hardware={}, world_size=1, total_steps=100, start_step=start_step,
           resumed_from=f"step{start_step}" if start_step else None)


def run_folder(tmp_path, name, write_events, **heartbeat):
    paths = new_run_dir(tmp_path, name)
    paths.plan.write_text(Plan(name=name, model="tiny", data="sample").to_yaml())
    with EventWriter(paths.events) as w:
        write_events(w)
    write_status(paths, state="running", pid=999999999, pids=[999999999], total_steps=100, **heartbeat)
    return paths


def killed(paths):
    """The supervisor's end of a run whose only worker died without recording anything."""
    sup = sup_mod.Supervisor(paths, ["true"], direct=True)
    sup.deaths = {0: {"pid": 7575, "at": time.time(), "status": SIGKILL_STATUS}}
    assert sup._conclude() == 1


def progress(st):
    return st.get("step"), st.get("loss"), st.get("tokens_per_s")


def test_final_status_takes_step_loss_and_speed_from_the_newest_step_event(tmp_path):
    def stream(w):
        started(w, 0)
        step(w, 5, 6.6594, 144.0)   # the last heartbeat saw this one
        step(w, 10, 5.9569, 845.0)  # logged, then the kill before the next heartbeat

    paths = run_folder(tmp_path, "between", stream, step=5, loss=6.6594, tokens_per_s=144.0)
    killed(paths)
    st = read_status(paths)
    assert st["state"] == "failed" and progress(st) == (10, 5.9569, 845.0)
    assert events(paths, "run_finished")[0]["step"] == 10
    # what `zerotui runs` shows of the same folder
    assert latest_progress(paths, st) == progress(st)


def test_final_status_takes_the_step_report_over_the_heartbeat_when_rank_0_recorded_its_end(tmp_path):
    # Rank 0 said how it ended (its record has its step); the heartbeat before it was another worker's.
    def stream(w):
        started(w, 10)
        step(w, 12, 4.25, 900.0)

    paths = run_folder(tmp_path, "recorded", stream, step=11, loss=7.0, tokens_per_s=12.0)
    rec = record_start(paths.root, 0)
    record_end(paths.root, 0, rec, "completed", "reached the last step", step=12)
    sup = sup_mod.Supervisor(paths, ["true"], direct=True)
    assert sup._conclude() == 0
    st = read_status(paths)
    assert st["state"] == "completed" and progress(st) == (12, 4.25, 900.0)
    assert events(paths, "run_finished")[0]["step"] == 12


def test_a_step_a_resume_redid_does_not_count_at_the_end(tmp_path):
    # The first worker reached step 15 and was killed; its resume began at checkpoint 10 and was killed
    # before it logged a step. Steps 11..15 are superseded: the run stands at 10, with no loss yet.
    def stream(w):
        started(w, 0)
        step(w, 5, 6.6594, 144.0)
        step(w, 10, 5.9569, 845.0)
        step(w, 15, 5.5, 900.0)
        started(w, 10)

    paths = run_folder(tmp_path, "resumed", stream, step=15, loss=5.5, tokens_per_s=900.0)
    newest = [e for e in events(paths) if e["type"] == "step"][-1]
    assert newest["step"] == 15 and superseded_flags(events(paths))[events(paths).index(newest)]
    killed(paths)
    assert events(paths, "run_finished")[0]["step"] == 10
    st = read_status(paths)
    assert progress(st) == (10, None, None)
    assert summarise(paths).state == "failed"


def test_the_resumed_workers_own_steps_count_once_it_has_logged_one(tmp_path):
    def stream(w):
        started(w, 0)
        step(w, 15, 5.5, 900.0)
        started(w, 10)
        step(w, 12, 5.7, 880.0)  # redone: the one that stands

    paths = run_folder(tmp_path, "redone", stream, step=15, loss=5.5, tokens_per_s=900.0)
    killed(paths)
    assert events(paths, "run_finished")[0]["step"] == 12
    assert progress(read_status(paths)) == (12, 5.7, 880.0)
