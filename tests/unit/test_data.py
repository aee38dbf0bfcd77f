"""Data loading: every file type and row format, prompt masking, packing, bad rows, the cache, the split and
the resumable sampler. Real files on disk, the shipped tiny tokenizer; no DeepSpeed."""
from __future__ import annotations

import csv
import json
import os

import pytest
import torch
from data_shared import _cache, tok, write_jsonl  # noqa: F401 (_cache, tok: fixtures)

from zerotui.core.data import prepare as data_mod
from zerotui.core.errors import DataError
from zerotui.core.plan.schema import Plan
from zerotui.core.data.sampler import DataOrder, DataPosition
from zerotui.core.model.tiny import tiny_tokenizer
from zerotui.core.data.tokenise import IGNORE, collate

ALPACA = [
    {"instruction": "Add the numbers.", "input": "2 and 3", "output": "2 + 3 = 5."},
    {"instruction": "Reverse the word.", "input": "stone", "output": "enots"},
    {"instruction": "What is 7 times 8?", "input": "", "output": "7 x 8 = 56."},
    {"instruction": "Spell it.", "input": "river", "output": "r-i-v-e-r"},
]


def plan_for(path, **kw) -> Plan:
    kw.setdefault("eval_fraction", 0.0)
    kw.setdefault("seq_len", 128)
    return Plan(data=str(path), **kw)


def targets_text(tok, ids, labels) -> str:
    return tok.decode([int(i) for i, l in zip(ids, labels) if l != IGNORE])


# -- file types --------------------------------------------------------------------------------------

def test_each_file_type_reads_the_same_rows(tmp_path, tok):
    files = {
        "json": tmp_path / "a.json", "jsonl": tmp_path / "a.jsonl", "csv": tmp_path / "a.csv",
        "parquet": tmp_path / "a.parquet",
    }
    files["json"].write_text(json.dumps(ALPACA), encoding="utf-8")
    write_jsonl(files["jsonl"], ALPACA)
    with open(files["csv"], "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=["instruction", "input", "output"])
        w.writeheader()
        w.writerows(ALPACA)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(ALPACA), files["parquet"])
    results = {}
    for kind, path in files.items():
        d = data_mod.prepare_data(plan_for(path), tok, use_cache=False)
        assert d.report.format == "alpaca", kind
        assert d.report.rows_used == 4, kind
        results[kind] = [d.train.example(i)[0].tolist() for i in range(len(d.train))]
    assert results["json"] == results["jsonl"] == results["csv"] == results["parquet"]


def test_json_object_holding_a_list_and_jsonl_named_json(tmp_path, tok):
    a = tmp_path / "wrapped.json"
    a.write_text(json.dumps({"version": 2, "data": ALPACA}), encoding="utf-8")
    assert data_mod.prepare_data(plan_for(a), tok, use_cache=False).report.rows_used == 4
    b = write_jsonl(tmp_path / "lines.json", ALPACA)
    assert data_mod.prepare_data(plan_for(b), tok, use_cache=False).report.rows_used == 4


def test_a_json_array_saved_as_jsonl_is_named_with_the_fix(tmp_path, tok):
    # the whole array on one line of a .jsonl: each "row" is a list, and the fix is the file's name
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(ALPACA) + "\n" + json.dumps(ALPACA) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        data_mod.prepare_data(plan_for(path), tok, use_cache=False)
    assert "not objects with named fields (each is a JSON array)" in err.value.message
    assert "belongs in a .json file, not .jsonl" in err.value.hint
    fixed = tmp_path / "rows.json"
    fixed.write_text(json.dumps(ALPACA), encoding="utf-8")
    assert data_mod.prepare_data(plan_for(fixed), tok, use_cache=False).report.rows_used == 4


def test_plain_text_paragraphs_are_samples_trained_whole(tmp_path, tok):
    p = tmp_path / "book.txt"
    p.write_text("first line\nsecond line\n\nanother paragraph\n\n\nthird one\n", encoding="utf-8")
    d = data_mod.prepare_data(plan_for(p), tok, use_cache=False)
    assert d.report.format == "text" and d.report.rows_used == 3
    ids, labels = d.train.example(0)
    assert tok.decode(ids.tolist(), skip_special_tokens=True) == "first line\nsecond line"
    assert (labels == ids).all()  # text: every token is a target
    assert ids[-1] == tok.eos_token_id


def test_hub_dataset_offline_is_a_clear_data_error(tmp_path, tok, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(DataError) as err:
        data_mod.prepare_data(Plan(data="hub:zerotui-test/not-here"), tok, use_cache=False)
    assert "zerotui-test/not-here" in err.value.message and "offline" in err.value.message
    assert "local" in err.value.hint


# -- formats and masking -------------------------------------------------------------------------------

def test_alpaca_prompt_is_masked_answer_is_trained(tmp_path, tok):
    d = data_mod.prepare_data(plan_for(write_jsonl(tmp_path / "a.jsonl", ALPACA[:1])), tok, use_cache=False)
    ids, labels = d.train.example(0)
    text = tok.decode(ids.tolist())
    assert "Add the numbers.\n\n2 and 3" in text  # instruction and input are both in the prompt
    # Only the answer (and the end-of-turn tokens) is a target; nothing of the prompt is.
    assert targets_text(tok, ids, labels).startswith("2 + 3 = 5.<|eos|>")
    assert "Add" not in targets_text(tok, ids, labels)
    first_target = int((labels != IGNORE).nonzero()[0])
    assert tok.decode(ids[:first_target].tolist()).endswith("<|assistant|>\n")


def test_chat_trains_every_assistant_turn_and_nothing_else(tmp_path, tok):
    row = {"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Add 2 and 2"},
        {"role": "assistant", "content": "2 + 2 = 4."},
    ]}
    d = data_mod.prepare_data(plan_for(write_jsonl(tmp_path / "c.jsonl", [row])), tok, use_cache=False)
    assert d.report.format == "chat"
    ids, labels = d.train.example(0)
    trained = targets_text(tok, ids, labels)
    assert "Hello." in trained and "2 + 2 = 4." in trained
    for prompt_part in ("Be brief", "Hi there", "Add 2 and 2", "<|user|>"):
        assert prompt_part not in trained


def test_sharegpt_conversations_are_read_as_chat(tmp_path, tok):
    row = {"conversations": [{"from": "human", "value": "Say yes"}, {"from": "gpt", "value": "Yes."}]}
    d = data_mod.prepare_data(plan_for(write_jsonl(tmp_path / "s.jsonl", [row])), tok, use_cache=False)
    ids, labels = d.train.example(0)
    assert d.report.format == "chat" and targets_text(tok, ids, labels).startswith("Yes.")


def test_without_a_chat_template_the_plain_layout_is_masked(tmp_path):
    tok = tiny_tokenizer()
    tok.chat_template = None
    d = data_mod.prepare_data(plan_for(write_jsonl(tmp_path / "a.jsonl", ALPACA[:1])), tok, use_cache=False)
    ids, labels = d.train.example(0)
    assert "### Instruction:\nAdd the numbers." in tok.decode(ids.tolist())
    assert targets_text(tok, ids, labels) == "2 + 3 = 5.<|eos|>"


def test_prompt_response_with_custom_field_names(tmp_path, tok):
    rows = [{"q": "Capital of France?", "a": "Paris."}]
    p = plan_for(write_jsonl(tmp_path / "pr.jsonl", rows), prompt_field="q", response_field="a")
    d = data_mod.prepare_data(p, tok, use_cache=False)
    ids, labels = d.train.example(0)
    assert d.report.format == "prompt_response"
    assert targets_text(tok, ids, labels).startswith("Paris.") and "France" not in targets_text(tok, ids, labels)


def test_unknown_fields_name_what_was_found_and_what_would_work(tmp_path, tok):
    p = write_jsonl(tmp_path / "x.jsonl", [{"question": "a", "answer": "b"}])
    with pytest.raises(DataError) as err:
        data_mod.prepare_data(plan_for(p), tok, use_cache=False)
    assert "answer" in err.value.message and "question" in err.value.message
    assert "--data-format" in err.value.hint


# -- bad input ---------------------------------------------------------------------------------------------

def test_bad_rows_are_skipped_counted_and_the_first_reported(tmp_path, tok):
    p = tmp_path / "mixed.jsonl"
    lines = [json.dumps(ALPACA[0]), "{not json", json.dumps({"instruction": "no answer"}),
             json.dumps(ALPACA[1]), json.dumps({"instruction": "x", "output": ""})]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    d = data_mod.prepare_data(plan_for(p), tok, use_cache=False)
    r = d.report
    assert (r.rows_read, r.rows_used, r.bad_rows) == (5, 2, 3)
    assert r.bad_examples[0].startswith("line 2: not valid JSON")
    assert "line 3: missing 'output'" in r.bad_examples
    assert "line 5: 'output' is empty" in r.bad_examples
    assert "3 rows skipped" in r.problems()


def test_nothing_usable_names_the_file_and_the_expected_fields(tmp_path, tok):
    p = write_jsonl(tmp_path / "bad.jsonl", [{"instruction": "a", "output": 3}, {"instruction": "b", "output": None}])
    with pytest.raises(DataError) as err:
        data_mod.prepare_data(plan_for(p), tok, use_cache=False)
    assert str(p) in err.value.message and "no usable alpaca rows out of 2" in err.value.message
    assert "'output'" in err.value.hint


@pytest.mark.parametrize("content", [b"", b"  \n\n"])
def test_empty_file(tmp_path, tok, content):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(content)
    with pytest.raises(DataError, match="is empty"):
        data_mod.prepare_data(plan_for(p), tok, use_cache=False)


def test_wrong_encoding_says_utf8_and_where(tmp_path, tok):
    p = tmp_path / "latin.jsonl"
    p.write_bytes(json.dumps(ALPACA[0]).encode() + b"\n" + '{"instruction": "caf\xe9", "output": "x"}\n'.encode("latin-1"))
    with pytest.raises(DataError) as err:
        data_mod.prepare_data(plan_for(p), tok, use_cache=False)
    assert "not UTF-8" in err.value.message and "line 2" in err.value.message and "iconv" in err.value.hint


def test_missing_file_and_unknown_suffix(tmp_path, tok):
    with pytest.raises(DataError, match="does not exist"):
        data_mod.prepare_data(plan_for(tmp_path / "nope.jsonl"), tok, use_cache=False)
    (tmp_path / "d.xlsx").write_bytes(b"PK")
    with pytest.raises(DataError, match="unknown type '.xlsx'"):
        data_mod.prepare_data(plan_for(tmp_path / "d.xlsx"), tok, use_cache=False)


def test_rows_are_cut_at_seq_len_and_prompts_that_fill_it_are_dropped(tmp_path, tok):
    long_answer = {"instruction": "Count.", "input": "", "output": " ".join(str(i) for i in range(200))}
    long_prompt = {"instruction": "word " * 200, "input": "", "output": "ok"}
    p = write_jsonl(tmp_path / "long.jsonl", [ALPACA[0], long_answer, long_prompt])
    d = data_mod.prepare_data(plan_for(p, seq_len=64), tok, use_cache=False)
    assert d.report.truncated == 2 and d.report.no_target == 1 and d.report.rows_used == 2
    assert max(d.train.lengths().tolist()) == 64


# -- packing, split, cache ------------------------------------------------------------------------------

def test_packing_fills_sequences_without_splitting_examples(tmp_path, tok):
    rows = [ALPACA[i % 4] for i in range(40)]
    p = write_jsonl(tmp_path / "a.jsonl", rows)
    plain = data_mod.prepare_data(plan_for(p), tok, use_cache=False)
    packed = data_mod.prepare_data(plan_for(p, packing=True), tok, use_cache=False)
    lengths = packed.train.lengths()
    assert int(lengths.max()) <= 128 and len(packed.train) < len(plain.train)
    assert int(lengths.sum()) == int(plain.train.lengths().sum())  # every token kept, none duplicated
    assert packed.train.target_tokens() == plain.train.target_tokens()
    ids, _ = packed.train.example(0)
    assert int((ids == tok.bos_token_id).sum()) > 1  # several examples, each whole from its BOS


def test_eval_split_is_seeded_disjoint_and_sized(tmp_path, tok):
    rows = [{"instruction": f"Say {i}.", "input": "", "output": f"{i}."} for i in range(100)]
    p = write_jsonl(tmp_path / "n.jsonl", rows)
    a = data_mod.prepare_data(plan_for(p, eval_fraction=0.1, seed=1), tok, use_cache=False)
    b = data_mod.prepare_data(plan_for(p, eval_fraction=0.1, seed=1), tok, use_cache=False)
    c = data_mod.prepare_data(plan_for(p, eval_fraction=0.1, seed=2), tok, use_cache=False)
    as_set = lambda ts: {tuple(ts.example(i)[0].tolist()) for i in range(len(ts))}
    assert len(a.eval) == 10 and len(a.train) == 90
    assert as_set(a.eval) == as_set(b.eval) != as_set(c.eval)
    assert not as_set(a.eval) & as_set(a.train)


def test_cache_hit_then_miss_when_the_file_or_a_field_changes(tmp_path, tok):
    p = write_jsonl(tmp_path / "a.jsonl", ALPACA)
    first = data_mod.prepare_data(plan_for(p), tok)
    second = data_mod.prepare_data(plan_for(p), tok)
    assert not first.report.cache_hit and second.report.cache_hit
    assert torch.equal(first.train.ids, second.train.ids)
    assert not data_mod.prepare_data(plan_for(p, seq_len=64), tok).report.cache_hit
    write_jsonl(p, ALPACA + ALPACA[:1])
    os.utime(p, ns=(1, 1))  # even with an old mtime: the size changed
    changed = data_mod.prepare_data(plan_for(p), tok)
    assert not changed.report.cache_hit and changed.report.rows_used == 5


def test_the_shipped_sample_is_alpaca_and_fully_usable(tok):
    d = data_mod.prepare_data(Plan(data="sample", seq_len=128), tok, use_cache=False)
    assert d.report.format == "alpaca" and d.report.bad_rows == 0 and d.report.truncated == 0
    assert d.report.rows_used >= 1000 and len(d.eval) == round(d.report.rows_used * 0.05)


# -- collate and sampler ---------------------------------------------------------------------------------

def test_collate_pads_to_the_batch_with_masked_labels():
    a = (torch.tensor([1, 5, 6], dtype=torch.int32), torch.tensor([IGNORE, 5, 6], dtype=torch.int32))
    b = (torch.tensor([1, 7] * 5, dtype=torch.int32), torch.tensor([1, 7] * 5, dtype=torch.int32))
    batch = collate([a, b], pad_id=0, seq_len=128)
    assert batch["input_ids"].shape == (2, 16)  # longest 10, rounded up to a multiple of 8
    assert batch["attention_mask"][0].tolist() == [1, 1, 1] + [0] * 13
    assert (batch["labels"][0, 3:] == IGNORE).all() and batch["input_ids"][0, 3:].eq(0).all()
    assert collate([a, b], pad_id=0, seq_len=12)["input_ids"].shape == (2, 12)  # never wider than seq_len


def test_rows_of_one_length_are_not_padded_so_the_attention_mask_is_all_ones():
    """A one-row micro-batch (or rows all cut to seq_len) needs no padding; rounding it up to 8 would put
    zeros in the mask, and transformers then gives SDPA an explicit mask instead of its causal path."""
    b = (torch.tensor([1, 7] * 5 + [3], dtype=torch.int32), torch.tensor([1, 7] * 5 + [3], dtype=torch.int32))
    one = collate([b], pad_id=0, seq_len=128)
    assert one["input_ids"].shape == (1, 11) and one["attention_mask"].eq(1).all()
    two = collate([b, b], pad_id=0, seq_len=128)
    assert two["input_ids"].shape == (2, 11) and two["attention_mask"].eq(1).all()


def test_sampler_resumes_at_the_same_place_and_ranks_partition_each_batch():
    full = DataOrder(50, micro_batch=4, world=1, rank=0, seed=3)
    seq = [full.next() for _ in range(30)]  # crosses the epoch boundary (12 batches an epoch)
    resumed = DataOrder(50, micro_batch=4, world=1, rank=0, seed=3)
    resumed.pos = DataPosition(epoch=1, batch=5)
    assert [resumed.next() for _ in range(13)] == seq[17:30]
    assert seq[0] != seq[12]  # each epoch has its own order
    assert len({i for b in seq[:12] for i in b}) == 48  # no repeats within an epoch

    r0 = DataOrder(50, micro_batch=4, world=2, rank=0, seed=3)
    r1 = DataOrder(50, micro_batch=4, world=2, rank=1, seed=3)
    for _ in range(6):
        a, b = r0.next(), r1.next()
        assert len(a) == len(b) == 4 and not set(a) & set(b)
    assert r0.pos == r1.pos == DataPosition(epoch=1, batch=0)  # 50 // 8 = 6 global batches an epoch


def test_sampler_refuses_data_smaller_than_one_global_batch():
    with pytest.raises(DataError, match="fewer than one micro-batch"):
        DataOrder(7, micro_batch=4, world=2, rank=0, seed=0)


def test_a_csv_cell_larger_than_the_csv_modules_default_limit_is_a_row(tmp_path):
    """One document of 200,000 characters in a cell: the csv module's 128 KiB field limit raised
    _csv.Error out of the launch's pre-check (a traceback)."""
    from zerotui.core.data.files import read_rows

    f = tmp_path / "big.csv"
    f.write_text("text\n" + "".join(f"row {i}\n" for i in range(20)) + '"' + "a" * 200_000 + '"\n')
    rows = read_rows(str(f))
    assert len(rows.rows) == 21 and len(rows.rows[-1]["text"]) == 200_000 and rows.bad.count == 0


def test_an_unclosed_csv_quote_is_reported_not_trained_as_one_row(tmp_path):
    """A quote opened and never closed made the csv module read the 50 rows after it as one value,
    silently; that row is now skipped and named, and the rows before it are kept."""
    from zerotui.core.data.files import read_rows

    f = tmp_path / "unterm.csv"
    f.write_text("text\n" + "".join(f"a {i}\n" for i in range(50)) + '"unterminated\n'
                 + "".join(f"b {i}\n" for i in range(50)))
    rows = read_rows(str(f))
    assert [r["text"] for r in rows.rows] == [f"a {i}" for i in range(50)]
    assert rows.bad.examples == ["line 52: a quote opened here is never closed: lines 52-102 were read as one "
                                 "row, skipped"]
    # Quoted fields that span lines and doubled quotes are CSV as it should be: untouched
    ok = tmp_path / "ok.csv"
    ok.write_text('text,x\n"multi\nline",1\nplain,2\n"he said ""hi""",3\n')
    assert [r["text"] for r in read_rows(str(ok)).rows] == ["multi\nline", "plain", 'he said "hi"']


def test_a_huge_row_is_cut_before_tokenising_and_keeps_its_first_tokens(tok, monkeypatch):
    """A 300 MB row was tokenised whole (21 GB resident, the OOM killer); rows are cut to what can reach
    their first seq_len tokens first. Here the cut rows give the tokens, labels and counts the whole rows
    give: one word of 400,000 letters, prose, and a prompt/answer row whose answer starts past the cut."""
    from zerotui.core.data import tokenise as tk
    from zerotui.core.data.prompts import Rendered

    words = " ".join(f"w{i % 977} and, {i}!" for i in range(40_000))
    rows = [Rendered("a" * 400_000, train_all=True), Rendered(words, train_all=True),
            Rendered("Q: " + words + " A: yes", spans=[(len(words) + 6, len(words) + 10)]),
            Rendered("short row", train_all=True)]
    assert tk.char_limit(tok, 64) < 200_000  # the first three are cut
    cut_stats, whole_stats = tk.TokeniseStats(), tk.TokeniseStats()
    cut = tk.tokenise(rows, tok, 64, cut_stats)
    monkeypatch.setattr(tk, "char_limit", lambda tokenizer, seq_len: 2**62)
    whole = tk.tokenise(rows, tok, 64, whole_stats)
    assert cut == whole and cut[2] is None and len(cut[0][0]) == 64
    assert (cut_stats.truncated, cut_stats.no_target) == (whole_stats.truncated, whole_stats.no_target) == (3, 1)
