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
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
import torch
from zerotui.core.data import cache_bound
from zerotui.core.data.arrow_rows import rows_of
from zerotui.core.data.arrow_tokenise import tokenise_source
from zerotui.core.data.files import BadRows
from zerotui.core.data.flat_store import read_store, write_store
from zerotui.core.data.prompts import expected_fields, template_source
from zerotui.core.data.sources import fingerprint_of, open_source
from zerotui.core.data.tokenise import (
    TokenSet,
    collate,
    collate_packed,
    packing_supported,
)
from zerotui.core.errors import DataError
from zerotui.core.paths import cache_root
from zerotui.core.plan.data_source import sources

#: 3: Arrow-backed; train / eval stored as memory-mapped arrays (``flat_store``), sources mixed by weight.
CACHE_VERSION = 3
#: The plan fields that change the assembled result (and so are part of its key; the data is keyed by
#: its sources' fingerprints and weights).
PLAN_KEYS = ("data_format", "text_field", "prompt_field", "response_field", "messages_field",
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
    #: Which cache answered, in words (the worker log's data line says it).
    cache: str = ""
    #: Mixed data: per entry its label, weight and usable rows.
    mix: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> str:
        s = (f"data {self.source}: {self.format}, {self.rows_used} of {self.rows_read} rows used, "
             f"{self.train_sequences} train / {self.eval_sequences} eval sequences")
        if self.truncated:
            s += f", {self.truncated} cut at seq_len"
        if self.cache:
            s += f" ({self.cache})"
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
    #: Unpacked batches leave the padding unmasked (``collate``'s ``causal``): set by the trainer once it
    #: knows the model is of the Llama family (core/train/engine.py).
    causal: bool = False

    def batch(self, which: TokenSet, indices: list[int]) -> dict[str, Any]:
        """The model inputs of a micro-batch: ``collate`` (with ``attention_mask``, or a ``token_count``
        entry that is no model input where ``causal``) for unpacked sets, ``collate_packed``
        (``position_ids`` per document and a ``token_count``) for packed ones."""
        if which.packed:
            rows = [(*which.example(i), which.positions(i)) for i in indices]
            return collate_packed(rows, self.pad_id, self.seq_len, flash=self.attention == "flash")
        return collate([which.example(i) for i in indices], self.pad_id, self.seq_len, causal=self.causal)


def cache_dir() -> Path:
    return cache_root() / "tokenised"


def tokenizer_fingerprint(tokenizer: Any) -> str:
    h = hashlib.sha256()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    h.update((backend.to_str() if backend is not None else f"{tokenizer.name_or_path}|{len(tokenizer)}").encode())
    h.update((template_source(tokenizer) or "").encode())
    h.update(f"{tokenizer.bos_token}|{tokenizer.eos_token}|{tokenizer.pad_token}".encode())
    return h.hexdigest()


def store_key(plan: Any, fingerprints: list[str], tokenizer_fp: str) -> str:
    """The assembled sets' key: every source's fingerprint and weight, the tokenizer, the shaping fields."""
    fields = {k: str(getattr(plan, k)) for k in PLAN_KEYS}
    mix = [[fp, s.weight] for fp, s in zip(fingerprints, sources(plan.data))]
    blob = json.dumps({"v": CACHE_VERSION, "data": mix, "tok": tokenizer_fp, "plan": fields}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def prepare_data(plan: Any, tokenizer: Any, progress: Optional[Progress] = None,
                 use_cache: bool = True) -> PreparedData:
    """Tokenised train (and eval) sets for ``plan``; raises DataError when nothing usable remains."""
    if plan.packing and not packing_supported():
        raise DataError("packing needs transformers 4.54 or newer: older versions would let packed rows "
                        "attend to each other", "upgrade transformers, or turn packing off", "packing")
    pad_id, tok_fp = _pad_id(tokenizer), tokenizer_fingerprint(tokenizer)
    bound = cache_bound.limit() if use_cache else 0  # a malformed ZEROTUI_CACHE_MAX stops before any work
    root = cache_dir() if use_cache else Path(tempfile.mkdtemp(prefix=".uncached-", dir=_made(cache_root())))
    try:
        entries = sources(plan.data)
        folder = root / f"set-{store_key(plan, [fingerprint_of(e) for e in entries], tok_fp)}"
        stored = read_store(folder) if use_cache else None
        report = _stored_report(stored[1]) if stored is not None else None
        if stored is not None and report is not None:
            sets = stored[0]
            report.cache_hit, report.cache = True, "assembled cache (tokenised earlier)"
            cache_bound.touch(folder)
        else:
            try:
                sets, report = _assemble(plan, tokenizer, tok_fp, entries, root, folder, progress)
            except OSError as err:  # a full disk or a read-only cache: the sets are written there, never half
                raise DataError(f"the tokenised data could not be written to {root} ({err.strerror or err})",
                                "free space there, or set ZEROTUI_CACHE_DIR to a folder on a disk with room") from None
            if use_cache:  # new entries: the least recently used go while the cache is over its bound
                note = cache_bound.prune(root, bound).note()
                report.cache = f"{report.cache}; {note}" if note else report.cache
        if not use_cache:  # the folder goes: keep the sets in memory
            sets = {k: TokenSet(*(t.clone() if t is not None else None for t in (v.ids, v.labels, v.offsets,
                                                                                  v.doc_offsets)))
                    for k, v in sets.items()}
    finally:
        if not use_cache:
            shutil.rmtree(root, ignore_errors=True)
    return PreparedData(sets["train"], sets.get("eval"), report, pad_id, plan.seq_len, _attention(plan))


def _assemble(plan: Any, tokenizer: Any, tok_fp: str, entries: list, root: Path, folder: Path,
              progress: Optional[Progress]) -> tuple[dict[str, TokenSet], DataReport]:
    opened = [open_source(e, plan.text_field, root / "datasets") for e in entries]
    total = sum(len(o.dataset) for o in opened)
    done = [0]
    if progress:
        progress(0, total)
    parts = []
    for src in opened:
        base = done[0]
        step = (lambda n, base=base: progress(base + n, total)) if progress else None
        parts.append(tokenise_source(src, plan, tokenizer, tok_fp, root, step))
        done[0] = base + len(src.dataset)
    report = _report(opened, parts)
    for src, part in zip(opened, parts):
        if not len(part.dataset):
            detail = f" (first: {'; '.join(part.bad_examples[:3])})" if part.bad_examples else ""
            if part.no_target and not part.bad_rows:
                detail = f" ({part.no_target} rows have no answer within the first {plan.seq_len} tokens)"
            raise DataError(f"{src.label}: no usable {part.format} rows out of {part.rows_read}{detail}",
                            expected_fields(part.format, plan))
    # The mix as row numbers into its table: ``mixed.select(...)`` and reading columns of the result
    # through datasets would build objects per row (see arrow_rows); rows[train_idx] is the same selection.
    mixed = rows_of(mix([p.dataset for p in parts], [s.weight for s in opened], plan.seed))
    train_idx, eval_idx = _split(len(mixed), plan.eval_fraction, plan.seed)
    sets = {"train": mixed.take(train_idx)}
    if eval_idx is not None:
        sets["eval"] = mixed.take(eval_idx)
    report.rows_used = len(mixed)
    del mixed, train_idx, eval_idx  # row-sized arrays that the sets now hold in their own order

    def counted(counts: dict[str, int]) -> dict:
        report.train_sequences, report.eval_sequences = counts["train"], counts.get("eval", 0)
        return asdict(report)

    return write_store(folder, sets, plan.packing, plan.seq_len, counted), report


def _report(opened: list, parts: list) -> DataReport:
    formats = sorted({p.format for p in parts})
    bad = BadRows()
    for p in parts:
        bad.merge(BadRows(p.bad_rows, list(p.bad_examples)))
    hits = sum(p.cache_hit for p in parts)
    return DataReport(
        source=" + ".join(s.label for s in opened),
        format=formats[0] if len(formats) == 1 else f"mixed ({', '.join(formats)})",
        rows_read=sum(p.rows_read for p in parts), bad_rows=bad.count, bad_examples=bad.examples,
        truncated=sum(p.truncated for p in parts), no_target=sum(p.no_target for p in parts),
        cache_hit=hits == len(parts),
        cache=(f"tokenised cache hit for {hits} of {len(parts)} sources" if hits else "tokenised afresh"),
        mix=[{"source": s.label, "weight": s.weight, "rows": len(p.dataset)} for s, p in zip(opened, parts)])


def mix(sets: list[Any], weights: list[float], seed: int) -> Any:
    """One stream from several tokenised sets: each next example comes from set i with probability
    weight_i / sum(weights) (seeded), until the first set runs out."""
    if len(sets) == 1:
        return sets[0]
    import datasets

    total = sum(weights)
    return datasets.interleave_datasets(sets, probabilities=[w / total for w in weights], seed=seed,
                                        stopping_strategy="first_exhausted")


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


def _split(n: int, fraction: float, seed: int) -> tuple[Any, Optional[Any]]:
    """Train and eval row indices (ascending): a seeded draw of ``fraction`` of the rows is held out."""
    n_eval = 0 if fraction <= 0 or n < 2 else min(n - 1, max(1, round(n * fraction)))
    if n_eval == 0:
        return np.arange(n), None
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(n, generator=g).numpy()
    return np.sort(order[n_eval:]), np.sort(order[:n_eval])


def _stored_report(d: dict) -> Optional[DataReport]:
    try:
        return DataReport(**d)
    except TypeError:  # written by another version: assemble again
        return None


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder
