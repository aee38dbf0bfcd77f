"""The tokenised-data cache's bound (core/data/cache_bound.py): the least recently used entries go once a
run writes new ones and the cache is over its size, recent ones never; a malformed bound is named.
Real files, the shipped tiny tokenizer and prepare_data; no DeepSpeed."""
from __future__ import annotations

import os
import time

import pytest
from data_shared import _cache, tok, tokens, write_jsonl  # noqa: F401 (_cache, tok: fixtures)
from zerotui.core.data import cache_bound
from zerotui.core.data import prepare as data_mod
from zerotui.core.errors import DataError
from zerotui.core.plan.schema import Plan

ROWS = [{"text": f"row {i} " + "words of a row " * (5 + i % 7)} for i in range(40)]


def plan_for(path) -> Plan:
    return Plan(data=str(path), eval_fraction=0.0, seq_len=64)


def age(root, seconds: float) -> None:
    """Make every entry look last used ``seconds`` ago."""
    then = time.time() - seconds
    for e in cache_bound.entries(root):
        os.utime(e.path, (then, then))


def entry(root, name: str, size: int, used_ago: float):
    path = root / name
    if name.endswith(".arrow"):
        path.write_bytes(b"x" * size)
    else:
        path.mkdir(parents=True)
        (path / "data").write_bytes(b"x" * size)
    then = time.time() - used_ago
    os.utime(path, (then, then))
    return path


def test_prune_removes_the_least_recently_used_until_the_cache_fits_and_spares_recent_entries(tmp_path):
    root = tmp_path / "tokenised"
    root.mkdir()
    oldest = entry(root, "src-a.arrow", 400_000, 5 * 86400)
    old_set = entry(root, "set-b", 400_000, 3 * 86400)
    old_ds = entry(root, "datasets/generator/default-c", 400_000, 2 * 86400)
    newer = entry(root, "src-d.arrow", 400_000, 86400)
    recent = entry(root, "set-e", 400_000, 60)  # a run preparing now: never removed
    tmp = entry(root, ".set-f.123.tmp", 400_000, 9 * 86400)  # a write in progress is not an entry
    lock = root / "datasets" / "_x.lock"
    lock.write_text("")
    total = sum(e.size for e in cache_bound.entries(root))

    got = cache_bound.prune(root, bound=total - 1_000_000)

    gone = [p for p in (oldest, old_set, old_ds, newer, recent) if not p.exists()]
    assert gone == [oldest, old_set, old_ds]  # oldest first, and only as many as needed
    assert newer.exists() and recent.exists() and tmp.exists() and lock.exists()
    assert got.removed == 3 and got.freed >= 1_200_000 and got.left <= total - 1_000_000
    assert "removed 3 least recently used entries" in got.note()


def test_prune_does_not_remove_what_was_used_recently_even_over_the_bound(tmp_path):
    root = tmp_path / "tokenised"
    root.mkdir()
    a = entry(root, "set-a", 100_000, 10)
    got = cache_bound.prune(root, bound=0)
    assert a.exists() and got.removed == 0 and got.note() == ""


@pytest.mark.parametrize("text, want", [("", cache_bound.DEFAULT_LIMIT), ("50GB", 50 * 10**9), ("1GiB", 2**30),
                                        ("0", 0)])
def test_the_bound_is_read_from_the_environment(text, want):
    assert cache_bound.limit({cache_bound.ENV: text}) == want


def test_a_malformed_bound_names_the_variable_and_what_would_work(tmp_path, monkeypatch, tok):
    monkeypatch.setenv(cache_bound.ENV, "lots")
    with pytest.raises(DataError) as err:
        data_mod.prepare_data(plan_for(write_jsonl(tmp_path / "a.jsonl", ROWS)), tok)
    assert "ZEROTUI_CACHE_MAX='lots' is not a size" in err.value.message and "50GB" in err.value.hint


def test_a_run_over_the_bound_removes_older_runs_entries_and_they_come_back_the_same(tmp_path, monkeypatch, tok):
    monkeypatch.setenv(cache_bound.ENV, "1")  # one byte: only the current run's entries stay
    root = data_mod.cache_dir()
    a = write_jsonl(tmp_path / "a.jsonl", ROWS)
    b = write_jsonl(tmp_path / "b.jsonl", ROWS[::-1])
    first = data_mod.prepare_data(plan_for(a), tok)
    a_entries = {e.path for e in cache_bound.entries(root)}
    assert {p.name.split("-")[0] for p in a_entries} >= {"set", "src", "default"}  # all three kinds written
    age(root, 2 * cache_bound.RECENT_S)

    other = data_mod.prepare_data(plan_for(b), tok)

    assert not any(p.exists() for p in a_entries)
    assert "least recently used entr" in other.report.cache
    left = cache_bound.entries(root)
    assert left and all(time.time() - e.used < cache_bound.RECENT_S for e in left)
    again = data_mod.prepare_data(plan_for(a), tok)  # tokenised afresh, to the same tokens
    assert not again.report.cache_hit and tokens(again.train) == tokens(first.train)


def test_a_cache_hit_marks_its_entries_used_so_the_bound_keeps_them(tmp_path, monkeypatch, tok):
    root = data_mod.cache_dir()
    a = write_jsonl(tmp_path / "a.jsonl", ROWS)
    b = write_jsonl(tmp_path / "b.jsonl", ROWS[::-1])
    data_mod.prepare_data(plan_for(a), tok)
    data_mod.prepare_data(plan_for(b), tok)
    age(root, 2 * cache_bound.RECENT_S)
    hit = data_mod.prepare_data(plan_for(a), tok)  # the assembled sets answer, and are touched
    assert hit.report.cache_hit
    assert cache_bound.prune(root, bound=1).removed > 0
    assert data_mod.prepare_data(plan_for(a), tok).report.cache_hit  # a's sets stayed, b's went
    assert not data_mod.prepare_data(plan_for(b), tok).report.cache_hit
