"""One damaged run folder never affects another: for each kind of damage (tests/corpus/make_hostile.py),
alone in a runs folder with a good run, listing and every run-name lookup answer at once, the damaged
run lists as 'damaged' with its reason, the good one is untouched, and the worker's writers refuse links
and FIFOs instead of following or blocking on them."""
from __future__ import annotations

import importlib.util
import os
import shutil

import pytest
from places import CORPUS
from test_safe_read import within

from zerotui.core.errors import RunError
from zerotui.core.run.folder import RunPaths, list_runs, read_status, require_intact, resolve_run, run_state

spec = importlib.util.spec_from_file_location("corpus_make_hostile", CORPUS / "make_hostile.py")
H = importlib.util.module_from_spec(spec)
spec.loader.exec_module(H)
GOOD = "20240101-000000-good"


@pytest.fixture(scope="module")
def every_damage(tmp_path_factory):
    root = tmp_path_factory.mktemp("damage")
    return root, H.build_runs(root / "all" / "runs")


def _alone(root, folders, kind):
    """A runs folder with the good run and only the ``kind`` damaged one."""
    runs = root / kind / "runs"
    if not runs.exists():
        runs.mkdir(parents=True)
        (runs.parent / "outside.txt").write_text("outside\n")
        for name in ("good", kind):
            shutil.copytree(folders[name], runs / folders[name].name, symlinks=True,
                            copy_function=_copy_special)
    return runs


def _copy_special(src, dst):
    if os.path.isfile(src) or os.path.islink(src):
        return shutil.copy2(src, dst, follow_symlinks=False)
    st = os.lstat(src)
    if (st.st_mode & 0o170000) == 0o010000:  # a FIFO
        return os.mkfifo(dst)
    return None  # a socket: leave it out of the copy (os.mkfifo stands in below)


@pytest.mark.parametrize("kind", list(H.DAMAGE))
def test_each_damage_is_listed_and_leaves_the_good_run_alone(every_damage, kind):
    root, folders = every_damage
    runs = _alone(root, folders, kind)
    damaged = folders[kind].name
    if not os.path.lexists(runs / damaged / H.DAMAGE[kind][0]):  # a socket the copy left out
        os.mkfifo(runs / damaged / H.DAMAGE[kind][0])
    listed = {s.name: s for s in within(10, list_runs, runs)}
    assert listed[GOOD].state == "completed" and listed[GOOD].status["step"] == 4
    assert listed[damaged].state == "damaged" and listed[damaged].damage
    assert H.DAMAGE[kind][0].split(".")[0] in listed[damaged].damage
    assert within(10, resolve_run, GOOD, runs).name == GOOD
    assert within(10, resolve_run, "good", runs).name == GOOD
    paths = within(10, resolve_run, damaged, runs)
    assert within(10, run_state, paths) == "damaged"
    assert isinstance(within(10, read_status, paths), dict)
    with pytest.raises(RunError, match="damaged"):
        require_intact(paths, "resume")
    assert (runs.parent / "outside.txt").read_text() == "outside\n"


def test_every_kind_of_damage_at_once(every_damage):
    root, folders = every_damage
    listed = {s.name: s.state for s in within(20, list_runs, root / "all" / "runs")}
    assert listed.pop(GOOD) == "completed"
    assert set(listed.values()) == {"damaged"} and len(listed) == len(H.DAMAGE)


def test_the_event_writer_never_follows_a_link_nor_blocks_on_a_fifo(tmp_path):
    from zerotui.core.events.stream import EventWriter, read_new

    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    os.symlink(outside, tmp_path / "events.jsonl")
    with pytest.raises(OSError):
        EventWriter(tmp_path / "events.jsonl")
    assert outside.read_text() == "keep\n"
    assert read_new(tmp_path / "events.jsonl", 0) == ([], 0)  # a reader does not follow it either
    os.unlink(tmp_path / "events.jsonl")
    os.mkfifo(tmp_path / "events.jsonl")
    with pytest.raises(OSError):
        within(5, EventWriter, tmp_path / "events.jsonl")
    assert within(5, read_new, tmp_path / "events.jsonl", 0) == ([], 0)


def test_history_and_overview_of_a_fifo_events_file_answer_at_once(tmp_path):
    from zerotui.core.events.reader import load_history
    from zerotui.core.run.folder import RunSummary
    from zerotui.core.run.overview import overview

    os.mkfifo(tmp_path / "events.jsonl")
    history, offset = within(5, load_history, tmp_path / "events.jsonl")
    assert offset == 0
    assert within(5, overview, RunSummary(RunPaths(tmp_path), "damaged")).step is None


@pytest.mark.parametrize("status", [{"pids": 5}, {"heartbeat": "soon"}, {"pid": [1]}, {"state": 3},
                                    {"pids": [True]}, {"step": 1.5}])
def test_a_tampered_status_field_never_reaches_callers(tmp_path, status):
    import json

    paths = RunPaths(tmp_path)
    (tmp_path / "plan.yaml").write_text("model: tiny\n")
    (tmp_path / "status.json").write_text(json.dumps({"state": "running", "heartbeat": 1.0, **status}))
    st = read_status(paths)
    assert not (set(status) & set(st)), st
    assert run_state(paths) == "damaged"


def test_a_nan_loss_in_status_is_news_not_damage(tmp_path):
    paths = RunPaths(tmp_path)
    (tmp_path / "plan.yaml").write_text("model: tiny\n")
    (tmp_path / "status.json").write_text('{"state": "failed", "loss": NaN, "heartbeat": 1.0}')
    assert run_state(paths) == "failed"
