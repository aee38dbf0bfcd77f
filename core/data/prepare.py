"""Training data, from a file or hub id to tokenised train / eval sets ready for the loop.

``prepare_data(plan, tokenizer)`` reads the rows (``core/data/files.py``), detects or applies the format
and renders each row (``core/data/prompts.py``), tokenises with the prompt masked (``core/data/tokenise.py``),
splits a seeded eval set off, packs when asked (each packed sequence keeps its documents apart:
``tokenise.pack``, docs/packing.md), and caches the result on disk. The cache key covers
everything the result depends on (the file's path, size and mtime, the tokenizer and its chat
template, and the plan fields that shape the data), so a resumed or repeated run loads in a moment and
an edited file or a changed option tokenises afresh.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import torch

from zerotui.core.data.files import BadRows, read_rows
from zerotui.core.errors import DataError
from zerotui.core.data.prompts import BadRow, Formatter, detect_format, expected_fields, template_source
from zerotui.core.data.tokenise import (TokeniseStats, TokenSet, collate, collate_packed, from_examples, pack,
                                        packing_supported, tokenise)
from zerotui.core.paths import cache_root

#: 2: packed sets store their document offsets, and the first label of each packed document is IGNORE.
CACHE_VERSION = 2
#: The plan fields that change the tokenised result (and so are part of the cache key).
PLAN_KEYS = ("data", "data_format", "text_field", "prompt_field", "response_field", "messages_field",
             "eval_fraction", "packing", "max_samples", "seq_len", "seed")

Progress = Callable[[int, Optional[int]], None]


@dataclass
class DataReport:
    """What happened to the data: shown in ``log`` / ``alert`` events and the dashboard."""

    source: str
    format: str
    rows_read: int = 0
    rows_used: int = 0
    bad_rows: int = 0
    bad_examples: list[str] = field(default_factory=list)
    truncated: int = 0
    no_target: int = 0
    train_sequences: int = 0
    eval_sequences: int = 0
    cache_hit: bool = False

    def summary(self) -> str:
        s = (f"data {self.source}: {self.format}, {self.rows_used} of {self.rows_read} rows used, "
             f"{self.train_sequences} train / {self.eval_sequences} eval sequences")
        if self.truncated:
            s += f", {self.truncated} cut at seq_len"
        if self.cache_hit:
            s += " (tokenised cache)"
        return s

    def problems(self) -> Optional[str]:
        """One line about skipped rows, or None when every row was used."""
        skipped = self.bad_rows + self.no_target
        if not skipped:
            return None
        parts = []
        if self.bad_rows:
            parts.append(f"{self.bad_rows} unreadable or malformed")
        if self.no_target:
            parts.append(f"{self.no_target} with no answer left within seq_len")
        first = "; ".join(self.bad_examples[:3])
        return f"{skipped} rows skipped ({', '.join(parts)})" + (f"; first: {first}" if first else "")


@dataclass
class PreparedData:
    train: TokenSet
    eval: Optional[TokenSet]
    report: DataReport
    pad_id: int
    seq_len: int
    #: The plan's attention kernel (sdpa, eager, flash): packed batches for flash carry varlen boundaries.
    attention: str = "sdpa"

    def batch(self, which: TokenSet, indices: list[int]) -> dict[str, Any]:
        """The model inputs of a micro-batch: ``collate`` (with ``attention_mask``) for unpacked sets,
        ``collate_packed`` (``position_ids`` per document and a ``token_count`` entry that is no model
        input) for packed ones."""
        if which.packed:
            rows = [(*which.example(i), which.positions(i)) for i in indices]
            return collate_packed(rows, self.pad_id, self.seq_len, flash=self.attention == "flash")
        return collate([which.example(i) for i in indices], self.pad_id, self.seq_len)


def cache_dir() -> Path:
    return cache_root() / "tokenised"


def tokenizer_fingerprint(tokenizer: Any) -> str:
    h = hashlib.sha256()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    h.update((backend.to_str() if backend is not None else f"{tokenizer.name_or_path}|{len(tokenizer)}").encode())
    h.update((template_source(tokenizer) or "").encode())
    h.update(f"{tokenizer.bos_token}|{tokenizer.eos_token}|{tokenizer.pad_token}".encode())
    return h.hexdigest()


def cache_key(plan: Any, data_fingerprint: str, tokenizer: Any) -> str:
    fields = {k: str(getattr(plan, k)) for k in PLAN_KEYS}
    blob = json.dumps({"v": CACHE_VERSION, "data": data_fingerprint, "tok": tokenizer_fingerprint(tokenizer),
                       "plan": fields}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def prepare_data(plan: Any, tokenizer: Any, progress: Optional[Progress] = None,
                 use_cache: bool = True) -> PreparedData:
    """Tokenised train (and eval) sets for ``plan``; raises DataError when nothing usable remains."""
    if plan.packing and not packing_supported():
        raise DataError("packing needs transformers 4.54 or newer: older versions would let packed rows "
                        "attend to each other", "upgrade transformers, or turn packing off", "packing")
    raw = read_rows(plan.data, plan.text_field, plan.max_samples)
    pad_id = _pad_id(tokenizer)
    key = cache_key(plan, raw.fingerprint, tokenizer)
    path = cache_dir() / f"{key}.pt"
    if use_cache:
        cached = _load_cache(path)
        if cached is not None:
            train, eval_, report = cached
            report.cache_hit = True
            return PreparedData(train, eval_, report, pad_id, plan.seq_len, _attention(plan))

    fmt = detect_format(raw.rows, plan, raw.source)
    report = DataReport(source=raw.source, format=fmt, rows_read=len(raw.rows) + raw.bad.count)
    bad = BadRows()
    bad.merge(raw.bad)
    formatter = Formatter(tokenizer, plan, fmt)
    rendered, kept_where = [], []
    for row, where in zip(raw.rows, raw.where):
        try:
            rendered.append(formatter.render(row))
            kept_where.append(where)
        except BadRow as err:
            bad.add(where, str(err))
    total = len(rendered)
    if progress:
        progress(0, total)
    stats = TokeniseStats()
    encoded = tokenise(rendered, tokenizer, plan.seq_len, stats,
                       progress=(lambda done: progress(done, total)) if progress else None)
    examples = [e for e in encoded if e is not None]
    report.bad_rows, report.bad_examples = bad.count, bad.examples
    report.truncated, report.no_target = stats.truncated, stats.no_target
    report.rows_used = len(examples)
    if not examples:
        detail = f" (first: {'; '.join(bad.examples[:3])})" if bad.examples else ""
        if stats.no_target and not bad.count:
            detail = f" ({stats.no_target} rows have no answer within the first {plan.seq_len} tokens)"
        raise DataError(f"{raw.source}: no usable {fmt} rows out of {report.rows_read}{detail}",
                        _expected(fmt, plan))

    train, eval_ = _split(from_examples(examples), plan.eval_fraction, plan.seed)
    if plan.packing:
        train = pack(train, plan.seq_len)
        eval_ = pack(eval_, plan.seq_len) if eval_ is not None else None
    report.train_sequences = len(train)
    report.eval_sequences = len(eval_) if eval_ is not None else 0
    if use_cache:
        _save_cache(path, train, eval_, report)
    return PreparedData(train, eval_, report, pad_id, plan.seq_len, _attention(plan))


def _attention(plan: Any) -> str:
    return str(getattr(plan, "attention", "sdpa"))


def _expected(fmt: str, plan: Any) -> str:
    return expected_fields(fmt, plan)


def _pad_id(tokenizer: Any) -> int:
    # Llama-style tokenizers have no pad token; padding positions are masked anyway, EOS is a safe id.
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if tid is not None:
            return int(tid)
    return 0


def _split(examples: TokenSet, fraction: float, seed: int) -> tuple[TokenSet, Optional[TokenSet]]:
    n = len(examples)
    n_eval = 0 if fraction <= 0 or n < 2 else min(n - 1, max(1, round(n * fraction)))
    if n_eval == 0:
        return examples, None
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(n, generator=g).tolist()
    eval_idx, train_idx = sorted(order[:n_eval]), sorted(order[n_eval:])
    return examples.subset(train_idx), examples.subset(eval_idx)


def _load_cache(path: Path) -> Optional[tuple[TokenSet, Optional[TokenSet], DataReport]]:
    try:
        blob = torch.load(path, weights_only=True)
        train = TokenSet.from_dict(blob["train"])
        eval_ = TokenSet.from_dict(blob["eval"]) if blob.get("eval") else None
        report = DataReport(**json.loads(blob["report"]))
        return train, eval_, report
    except FileNotFoundError:
        return None
    except Exception:  # a cache written by another version or torn: tokenise again
        return None


def _save_cache(path: Path, train: TokenSet, eval_: Optional[TokenSet], report: DataReport) -> None:
    """Best effort: a cache that cannot be written (read-only home, full disk) only costs time later."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        blob = {"train": train.to_dict(), "eval": eval_.to_dict() if eval_ is not None else None,
                "report": json.dumps(asdict(report))}
        torch.save(blob, tmp)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()  # type: ignore[possibly-undefined]
        except (OSError, UnboundLocalError):
            pass
