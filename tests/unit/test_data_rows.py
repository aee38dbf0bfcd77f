"""The assembled sets are written from Arrow row numbers chunk by chunk (core/data/arrow_rows.py), not
through datasets' per-row gather: the tokens, their order and the split must be exactly what datasets'
own ``select`` of the same mix gives. Real files, real datasets and pyarrow, the shipped tiny tokenizer."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
from data_shared import _cache, tok, tokens  # noqa: F401 (_cache, tok: fixtures)
from zerotui.core.data import prepare as data_mod
from zerotui.core.data.arrow_rows import Rows, rows_of, scatter_lists, spans
from zerotui.core.data.arrow_tokenise import tokenise_source
from zerotui.core.data.sources import open_source
from zerotui.core.plan.data_source import sources
from zerotui.core.plan.schema import Plan


def write_jsonl(path: Path, n: int, word: str, broken_every: int = 0) -> Path:
    lines = []
    for i in range(n):
        if broken_every and i % broken_every == 3:
            lines.append('{"instruction": "cut')  # unreadable: the usable rows are no longer contiguous
        else:
            lines.append(json.dumps({"instruction": f"{word} {i} " * (1 + i % 7), "output": f"{word} {i}"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def through_datasets(plan: Plan, tok) -> dict[str, list[list[int]]]:
    """The sets as datasets itself reads them: the previous way of writing the store, as the reference."""
    root = data_mod.cache_dir()
    fp = data_mod.tokenizer_fingerprint(tok)
    opened = [open_source(e, plan.text_field, root / "datasets") for e in sources(plan.data)]
    parts = [tokenise_source(s, plan, tok, fp, root) for s in opened]
    mixed = data_mod.mix([p.dataset for p in parts], [s.weight for s in opened], plan.seed)
    train_idx, eval_idx = data_mod._split(len(mixed), plan.eval_fraction, plan.seed)
    out = {"train": [list(r) for r in mixed.select(train_idx)["input_ids"]]}
    if eval_idx is not None:
        out["eval"] = [list(r) for r in mixed.select(eval_idx)["input_ids"]]
    return out


def test_one_source_with_gaps_writes_the_same_tokens_in_the_same_order(tmp_path, tok):
    p = write_jsonl(tmp_path / "a.jsonl", 3000, "apple", broken_every=10)
    plan = Plan(data=str(p), eval_fraction=0.1, seq_len=64, seed=3)
    d = data_mod.prepare_data(plan, tok)
    want = through_datasets(plan, tok)
    assert d.report.bad_rows == 300 and len(d.train) == len(want["train"]) == 2430
    assert tokens(d.train) == want["train"] and tokens(d.eval) == want["eval"]
    # labels are written the same way: the answer tokens are targets, the prompt is masked
    ids, labels = d.train.example(5)
    assert (labels[labels >= 0] == ids[labels >= 0]).all() and (labels < 0).any()


def test_a_weighted_mix_keeps_its_seeded_interleaving(tmp_path, tok):
    a = write_jsonl(tmp_path / "a.jsonl", 1200, "apple")
    b = write_jsonl(tmp_path / "b.jsonl", 900, "berry", broken_every=9)
    plan = Plan(data=[{"path": str(a), "weight": 2}, {"path": str(b), "weight": 1}], eval_fraction=0.05,
                seq_len=48, seed=11)
    d = data_mod.prepare_data(plan, tok)
    want = through_datasets(plan, tok)
    assert tokens(d.train) == want["train"] and tokens(d.eval) == want["eval"]
    assert len(d.train) + len(d.eval) == d.report.rows_used


def test_scatter_reads_every_chunk_in_any_order_with_repeats():
    rng = np.random.default_rng(0)
    chunks = []
    for _ in range(5):  # five record batches of different sizes, empty lists among them
        rows = [rng.integers(0, 99, rng.integers(0, 6)).tolist() for _ in range(int(rng.integers(2, 40)))]
        chunks.append(pa.array(rows, pa.list_(pa.int32())))
    chunks[2] = chunks[2].slice(1)  # a sliced chunk: its offsets do not start at 0
    expect = [list(map(int, r)) for c in chunks for r in c.to_pylist()]
    table = pa.table({"input_ids": pa.chunked_array(chunks)})
    order = np.concatenate([rng.permutation(len(expect)), [0, 0, len(expect) - 1]])
    want = [expect[i] for i in order]
    lengths = np.array([len(r) for r in want], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    out = np.full(int(lengths.sum()), -1, dtype=np.int32)
    scatter_lists(Rows(table, order), "input_ids", out, starts)
    assert out.tolist() == [t for r in want for t in r]
    kept = np.flatnonzero(rng.random(len(expect)) < 0.6)  # ascending, with gaps: the one-source path
    lengths = np.array([len(expect[i]) for i in kept], dtype=np.int64)
    out = np.full(int(lengths.sum()), -1, dtype=np.int32)
    scatter_lists(Rows(table, kept), "input_ids", out, np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    assert out.tolist() == [t for i in kept for t in expect[i]]


def test_rows_of_follows_datasets_selects_and_spans_are_exact():
    import datasets

    ds = datasets.Dataset.from_dict({"x": list(range(10))}).select([9, 2, 2, 5])
    part = rows_of(ds)
    assert part.rows.tolist() == [9, 2, 2, 5] and len(part.take(np.array([1, 3]))) == 2
    assert rows_of(datasets.Dataset.from_dict({"x": [1, 2]})).rows.tolist() == [0, 1]
    assert spans(np.array([10, 0, 5]), np.array([2, 0, 3])).tolist() == [10, 11, 5, 6, 7]
