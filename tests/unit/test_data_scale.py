"""Data through Hugging Face datasets: save_to_disk folders, weighted mixes, the tokenised cache, row
messages deep in a file, memory-mapped train sets and the preflight sample. Real files, real datasets,
the shipped tiny tokenizer; no DeepSpeed."""
from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
from data_shared import _cache, tok, tokens, write_jsonl  # noqa: F401 (_cache, tok: fixtures)
from zerotui.core.data import prepare as data_mod
from zerotui.core.errors import DataError, PlanError
from zerotui.core.plan.schema import Plan, plan_from_dict
from zerotui.core.run.input_check import check_data

ALPACA = [{"instruction": f"Say the number {i}.", "input": "", "output": f"The number is {i}."} for i in range(40)]


def test_a_save_to_disk_folder_reads_as_the_same_rows_as_jsonl(tmp_path, tok):
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(ALPACA).save_to_disk(str(folder))
    jsonl = write_jsonl(tmp_path / "a.jsonl", ALPACA)
    a = data_mod.prepare_data(Plan(data=str(folder), eval_fraction=0, seq_len=64), tok)
    b = data_mod.prepare_data(Plan(data=str(jsonl), eval_fraction=0, seq_len=64), tok)
    assert a.report.format == "alpaca" and a.report.rows_used == len(ALPACA)
    assert tokens(a.train) == tokens(b.train)


def test_a_dataset_dict_folder_takes_the_named_split_and_names_the_splits_it_has(tmp_path, tok):
    folder = tmp_path / "dd"
    datasets.DatasetDict({"train": datasets.Dataset.from_list(ALPACA[:30]),
                          "test": datasets.Dataset.from_list(ALPACA[30:])}).save_to_disk(str(folder))
    d = data_mod.prepare_data(Plan(data=[{"path": str(folder), "split": "test"}], eval_fraction=0), tok)
    assert d.report.rows_used == 10
    with pytest.raises(DataError, match=r"no split 'valid' \(it has train, test\)"):
        data_mod.prepare_data(Plan(data=[{"path": str(folder), "split": "valid"}]), tok)


def test_two_sources_mix_in_the_stream_by_their_weights(tmp_path, tok):
    a = write_jsonl(tmp_path / "a.jsonl", [{"text": f"apple {i}"} for i in range(1500)])
    b = write_jsonl(tmp_path / "b.jsonl", [{"text": f"berry {i}"} for i in range(1500)])
    plan = Plan(data=[{"path": str(a), "weight": 3}, {"path": str(b), "weight": 1}], eval_fraction=0.05, seq_len=32)
    d = data_mod.prepare_data(plan, tok)
    apple, berry = tok("apple")["input_ids"][-1], tok("berry")["input_ids"][-1]
    rows = tokens(d.train) + tokens(d.eval)
    from_a = sum(apple in r for r in rows)
    from_b = sum(berry in r for r in rows)
    assert from_a + from_b == len(rows) == d.report.rows_used
    assert from_a / len(rows) == pytest.approx(0.75, abs=0.03)
    # first_exhausted: the mix ends when the heavier source runs out, so all of it is used once
    assert 1450 <= from_a <= 1500 and [m["weight"] for m in d.report.mix] == [3.0, 1.0]
    again = data_mod.prepare_data(plan.with_changes(seed=7), tok)
    assert tokens(again.train) != tokens(d.train)  # the seed picks the interleaving


def test_the_second_run_reuses_the_tokenised_cache(tmp_path, tok):
    p = write_jsonl(tmp_path / "a.jsonl", ALPACA)
    plan = Plan(data=str(p), eval_fraction=0.1, seq_len=64)
    first = data_mod.prepare_data(plan, tok)
    tokenised = sorted(data_mod.cache_dir().glob("src-*.arrow"))
    assert len(tokenised) == 1 and first.report.cache == "tokenised afresh"
    written = (tokenised[0].stat().st_ino, tokenised[0].read_bytes())  # a hit touches its mtime (cache_bound)
    second = data_mod.prepare_data(plan, tok)
    assert second.report.cache_hit and "assembled cache" in second.report.summary()
    assert tokens(second.train) == tokens(first.train)
    # another split of the same rows: the rows are not tokenised again
    other = data_mod.prepare_data(plan.with_changes(eval_fraction=0.2), tok)
    assert other.report.cache == "tokenised cache hit for 1 of 1 sources"
    assert (tokenised[0].stat().st_ino, tokenised[0].read_bytes()) == written and len(list(data_mod.cache_dir().glob("src-*.arrow"))) == 1
    # another seq_len is another tokenisation
    assert data_mod.prepare_data(plan.with_changes(seq_len=32), tok).report.cache == "tokenised afresh"


def test_a_malformed_row_deep_in_a_large_file_is_named_by_line_and_field(tmp_path, tok):
    lines = [json.dumps(ALPACA[i % len(ALPACA)]) for i in range(6000)]
    lines[4320] = '{"instruction": "cut off'
    lines[5499] = json.dumps({"instruction": "no answer here"})
    p = tmp_path / "big.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    d = data_mod.prepare_data(Plan(data=str(p), eval_fraction=0, seq_len=64), tok)
    assert (d.report.rows_read, d.report.rows_used, d.report.bad_rows) == (6000, 5998, 2)
    assert d.report.bad_examples[0].startswith("line 4321: not valid JSON")
    assert d.report.bad_examples[1] == "line 5500: missing 'output'"
    assert "2 rows skipped" in d.report.problems() and "line 4321" in d.report.problems()
    again = data_mod.prepare_data(Plan(data=str(p), eval_fraction=0, seq_len=64), tok)
    assert again.report.cache_hit and again.report.bad_examples == d.report.bad_examples


def test_the_train_set_is_memory_mapped_from_the_cache(tmp_path, tok):
    p = write_jsonl(tmp_path / "a.jsonl", ALPACA)
    d = data_mod.prepare_data(Plan(data=str(p), eval_fraction=0, seq_len=64), tok)
    addr = d.train.ids.data_ptr()
    mapped = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, *rest = line.split(maxsplit=5)
        lo, hi = (int(x, 16) for x in span.split("-"))
        if lo <= addr < hi:
            mapped.append(rest[-1] if len(rest) == 5 else "")
    assert mapped and mapped[0].endswith("train.ids.npy")


def test_plan_files_take_a_list_of_entries_and_refuse_a_bad_one_by_name():
    plan = plan_from_dict({"data": [{"path": "a.jsonl", "weight": 2}, "b.parquet"]})
    assert [(s.path, s.weight) for s in plan.data] == [("a.jsonl", 2.0), ("b.parquet", 1.0)]
    assert plan_from_dict(plan.to_dict()).data == plan.data
    with pytest.raises(PlanError, match=r"data entry 2: weight .*greater than 0"):
        plan_from_dict({"data": [{"path": "a.jsonl"}, {"path": "b.jsonl", "weight": 0}]})
    with pytest.raises(PlanError, match="data entry 1: path field required"):
        plan_from_dict({"data": [{"file": "a.jsonl"}]})


def test_preflight_checks_a_folder_on_a_sample_and_each_entry_of_a_mix(tmp_path):
    folder = tmp_path / "saved"
    datasets.Dataset.from_list([{"instruction": "x", "output": ""}] * 50).save_to_disk(str(folder))
    with pytest.raises(DataError) as err:
        check_data(Plan(data=str(folder)))
    assert "no usable alpaca rows in its first 50 rows" in err.value.message
    assert "row 1: 'output' is empty" in err.value.message
    good = write_jsonl(tmp_path / "a.jsonl", ALPACA)
    check_data(Plan(data=[{"path": str(good)}]))
    with pytest.raises(DataError, match="nope.jsonl does not exist"):
        check_data(Plan(data=[{"path": str(good)}, {"path": str(tmp_path / "nope.jsonl")}]))
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(DataError, match="is a folder, not a file"):
        check_data(Plan(data=str(plain)))


FULL_DISK = r"""
import os, resource, signal, sys
from zerotui.core.data.prepare import prepare_data
from zerotui.core.errors import DataError
from zerotui.core.model.tiny import tiny_tokenizer
from zerotui.core.plan.schema import Plan
tok = tiny_tokenizer()
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
try:
    prepare_data(Plan(data=sys.argv[1]), tok)
except DataError as err:
    print(f"{err.message} | {err.hint}")
"""


@pytest.mark.parametrize("limit", [400_000, 4_000_000])  # met at an earlier and a later write
def test_a_full_disk_while_tokenising_is_one_clear_line_and_leaves_no_cache(tmp_path, limit):
    import os
    import subprocess
    import sys

    p = write_jsonl(tmp_path / "a.jsonl", [{"instruction": f"q {i} " * 5, "output": f"a {i} " * 10}
                                           for i in range(8000)])
    out = subprocess.run([sys.executable, "-c", FULL_DISK, str(p), str(limit)], capture_output=True, text=True,
                         env=dict(os.environ), timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "the tokenised data could not be written to" in out.stdout and "ZEROTUI_CACHE_DIR" in out.stdout
    cache = Path(os.environ["ZEROTUI_CACHE_DIR"]) / "tokenised"
    assert not list(cache.glob("set-*")) and not list(cache.glob("src-*"))  # nothing a later run would trust


def test_too_few_rows_names_the_rows_that_were_skipped(tmp_path):
    """One good row and one broken line under a 2-sequence micro-batch: the refusal counted "1 usable
    rows" and said nothing of the line that was skipped, which is the thing to fix."""
    data = tmp_path / "half.jsonl"
    data.write_text('{"text": "one good row"}\n{not json\n')
    with pytest.raises(DataError) as err:
        check_data(Plan(data=str(data), micro_batch=2, eval_fraction=0))
    assert err.value.message.startswith(f"{data}: 1 row usable (1 row skipped, line 2: not valid JSON")
    assert err.value.message.endswith("1 to train on: fewer than one micro-batch of 2 (2 x 1 process(es))")
