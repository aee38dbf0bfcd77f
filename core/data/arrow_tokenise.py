"""Rows of one source to tokenised examples with ``datasets.map`` (batched), cached in zerotui's cache.

Every row gives one output row, usable or not, so the account of skipped rows (which line, which field,
why: the messages of ``core/data/prompts.py``) survives in the cache and a cache hit reports exactly
what a fresh tokenisation reported. The cache file is named by a key over the source's fingerprint, the
tokenizer (and its chat template), ``seq_len``, the format and the field names, so later runs, resumes
and other mixes of the same source reuse it; an edited file or a changed option tokenises afresh.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from zerotui.core.data import cache_bound
from zerotui.core.data.files import BAD_EXAMPLES
from zerotui.core.data.prompts import DETECT_ROWS, BadRow, Formatter, detect_format
from zerotui.core.data.sources import Source
from zerotui.core.data.tokenise import BATCH, TokeniseStats, tokenise

#: Bump when the tokenised columns change meaning.
VERSION = 1
OK, BAD, NO_TARGET = 0, 1, 2
#: The plan fields that shape one source's tokenised rows.
SOURCE_KEYS = ("data_format", "text_field", "prompt_field", "response_field", "messages_field", "max_samples",
               "seq_len")


@dataclass
class Tokenised:
    dataset: Any                   # columns input_ids, labels, length: usable rows only
    format: str
    rows_read: int
    bad_rows: int = 0
    no_target: int = 0
    truncated: int = 0
    bad_examples: list[str] = field(default_factory=list)
    cache_hit: bool = False


def source_key(src: Source, plan: Any, tokenizer_fp: str) -> str:
    fields = {k: str(getattr(plan, k)) for k in SOURCE_KEYS}
    blob = json.dumps({"v": VERSION, "data": src.fingerprint, "tok": tokenizer_fp, "plan": fields}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def sample_rows(src: Source, n: int = DETECT_ROWS) -> list[tuple[Any, str]]:
    """The first ``n`` readable rows as Python objects, each with where it is (``line 7``, ``row 3``)."""
    ds = src.dataset
    if not src.raw:
        rows = ds.select(range(min(n, len(ds)))).to_list()
        return [(r, f"row {i + 1}") for i, r in enumerate(rows)]
    out: list[tuple[Any, str]] = []
    for start in range(0, len(ds), 1000):
        chunk = ds[start:start + 1000]
        for text, where in zip(chunk["_row"], chunk["_where"]):
            if text is not None:
                out.append((json.loads(text), where))
                if len(out) >= n:
                    return out
    return out


def tokenise_source(src: Source, plan: Any, tokenizer: Any, tokenizer_fp: str, cache: Path,
                    progress: Optional[Callable[[int], None]] = None) -> Tokenised:
    import datasets

    ds = src.dataset
    if src.raw:
        _refuse_unreadable(src)
    fmt = detect_format([r for r, _ in sample_rows(src)], plan, src.label)
    if plan.max_samples is not None:
        ds = _first_readable(ds, src.raw, plan.max_samples)
    path = cache / f"src-{source_key(src, plan, tokenizer_fp)}.arrow"
    hit = path.is_file()
    if hit:
        cache_bound.touch(path)
    formatter = Formatter(tokenizer, plan, fmt)
    features = datasets.Features({
        "input_ids": datasets.Sequence(datasets.Value("int32")), "labels": datasets.Sequence(datasets.Value("int32")),
        "length": datasets.Value("int32"), "status": datasets.Value("int8"), "why": datasets.Value("string"),
        "truncated": datasets.Value("int32")})
    done = [0]

    def encode(batch: dict[str, list], indices: list[int]) -> dict[str, list]:
        out = _encode(batch, indices, src.raw, formatter, tokenizer, plan.seq_len)
        done[0] += len(indices)
        if progress:
            progress(done[0])
        return out

    cache.mkdir(parents=True, exist_ok=True)
    tok = ds.map(encode, batched=True, batch_size=BATCH, with_indices=True, remove_columns=ds.column_names,
                 features=features, cache_file_name=str(path), load_from_cache_file=True,
                 new_fingerprint=path.stem, desc=None)
    status = column(tok, "status")
    bad_idx = np.flatnonzero(status == BAD)
    result = Tokenised(tok, fmt, len(tok), bad_rows=int(bad_idx.size), no_target=int((status == NO_TARGET).sum()),
                       truncated=int(column(tok, "truncated").sum()), cache_hit=hit)
    if bad_idx.size:
        result.bad_examples = list(tok.select(bad_idx[:BAD_EXAMPLES].tolist())["why"])
    keep = np.flatnonzero(status == OK)
    usable = tok.select_columns(["input_ids", "labels", "length"])
    # Every row usable (the usual case): no indices mapping at all, rather than datasets walking 1M
    # numbers in Python to find out that they are contiguous.
    result.dataset = usable if keep.size == len(tok) else usable.select(keep)
    return result


def column(ds: Any, name: str) -> np.ndarray:
    """One column as a numpy array, through Arrow (the numpy format would build it row by row). The other
    columns are dropped first, so that a selected or mixed dataset never has to gather the token lists."""
    return ds.select_columns([name]).with_format("arrow")[name].to_numpy()


def _refuse_unreadable(src: Source) -> None:
    """Every line broken (a truncated export, the wrong file): say so, not "cannot tell the format"."""
    from zerotui.core.data.files import FORMATS_HINT
    from zerotui.core.errors import DataError

    bad = src.dataset.with_format("arrow")["_bad"]
    if len(bad) and bad.null_count == 0:
        first = src.dataset.select(range(min(3, len(bad))))
        shown = "; ".join(f"{w}: {b}" for w, b in zip(first["_where"], first["_bad"]))
        raise DataError(f"data file {src.label}: none of its {len(bad)} rows could be read (first: {shown})",
                        FORMATS_HINT)


def _first_readable(ds: Any, raw: bool, n: int) -> Any:
    """``max_samples``: the first ``n`` readable rows, and the unreadable ones among them (counted as today)."""
    if not raw:
        return ds.select(range(min(n, len(ds))))
    bad = np.asarray(ds.with_format("arrow")["_bad"].is_null())
    readable = np.flatnonzero(bad)
    if readable.size <= n:
        return ds
    return ds.select(range(int(readable[n - 1]) + 1))


def _encode(batch: dict[str, list], indices: list[int], raw: bool, formatter: Formatter, tokenizer: Any,
            seq_len: int) -> dict[str, list]:
    n = len(indices)
    out: dict[str, list] = {"input_ids": [[] for _ in range(n)], "labels": [[] for _ in range(n)],
                            "length": [0] * n, "status": [OK] * n, "why": [None] * n, "truncated": [0] * n}
    rendered, at = [], []
    for k in range(n):
        where = batch["_where"][k] if raw else f"row {indices[k] + 1}"
        if raw and batch["_bad"][k] is not None:
            out["status"][k], out["why"][k] = BAD, f"{where}: {batch['_bad'][k]}"
            continue
        row = json.loads(batch["_row"][k]) if raw else {c: v[k] for c, v in batch.items()}
        try:
            rendered.append(formatter.render(row))
            at.append(k)
        except BadRow as err:
            out["status"][k], out["why"][k] = BAD, f"{where}: {err}"
    stats = TokeniseStats()
    for k, enc in zip(at, tokenise(rendered, tokenizer, seq_len, stats)):
        if enc is None:
            out["status"][k] = NO_TARGET
            continue
        ids, labels = enc
        out["input_ids"][k], out["labels"][k], out["length"][k] = ids, labels, len(ids)
    # ``tokenise`` counts the rows it cut at seq_len per call, not which: the batch's count rides on its
    # first row, so the column's sum is the total (a cut row and a long uncut one can be the same length).
    if n:
        out["truncated"][0] = stats.truncated
    return out
