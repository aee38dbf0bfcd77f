"""The scenarios' training text, and the widths and padding masks of the micro-batches past runs drew
from it (``ran_seq_len``, ``ran_masked``), which the estimator's rows rebuild."""
from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any, Optional

#: Words a row: about 8,300 tokens, so every scenario's micro-batches are as wide as its seq_len (rows
#: are cut to it; 3,000 words, ~7,800 tokens, until the twelfth session's 8,192-token plan). Until the ninth session (2026-12-04) rows were 1,400 words, 3,539-3,763 tokens, so a
#: 4,096-token plan ran narrower micro-batches (the collator pads to the batch's longest row):
#: 1b128k-full-ho56's allocator history has 7,312 tokens in a 2-row micro-batch
#: (benchmarks/results/memsnap-1b128k-ho56-2026-12-04.txt). ``ran_seq_len`` rebuilds those runs' widths.
WORDS = 3200
LEGACY_WORDS = 1400


def row_lengths(path: Path, seq_len: int = 1 << 20) -> tuple[int, ...]:
    """A write_data file's rows in tokens as zerotui's data pipeline makes them for the model folders'
    tokenizer (BOS and EOS included, cut to ``seq_len``), in the order the training set holds them."""
    from zerotui.core.data.prepare import prepare_data
    from zerotui.core.model.tiny import tiny_tokenizer
    from zerotui.core.plan.schema import plan_from_dict

    plan = plan_from_dict({"model": str(path.parent), "data": str(path), "data_format": "text", "seq_len": seq_len,
                           "eval_fraction": 0.0})
    return tuple(int(n) for n in prepare_data(plan, tiny_tokenizer()).train.lengths())


def ran_seq_len(plan: dict[str, Any], data: dict[str, Any]) -> int:
    """The widest micro-batch a scenario's run had (``data``: its result file). Files with
    ``data_longest_tokens`` ran on rows that fill every scenario: the plan's seq_len. Older files ran on
    LEGACY_WORDS-word rows: where the plan's seq_len is longer than the shortest of them, the run's
    micro-batches are rebuilt as its worker drew them (core/data/sampler.py's DataOrder with the plan's
    seed, max_steps x grad_accum of them, one GPU) from the rows as zerotui's data pipeline made them, and
    each is as wide as collate then padded it (the longest row rounded up to 8). Packed plans (none of
    the committed ones) fill the sequence when two rows fit in it."""
    seq = plan["seq_len"]
    if "data_longest_tokens" in data:
        return min(seq, -(-data["data_longest_tokens"] // 8) * 8)
    lengths = _legacy_lengths(seq)
    if seq <= min(lengths) or (plan.get("packing") and 2 * min(lengths) <= seq):
        return seq
    widths = [max(rows) for rows in _drawn(plan, lengths)]
    return min(seq, -(-max(widths) // 8) * 8)


def _drawn(plan: dict[str, Any], lengths: tuple[int, ...]) -> list[list[int]]:
    """The row lengths of every micro-batch a run drew, as its worker drew them (core/data/sampler.py's
    DataOrder with the plan's seed, max_steps x grad_accum of them, one GPU)."""
    from zerotui.core.data.sampler import DataOrder

    order = DataOrder(len(lengths), plan["micro_batch"], 1, 0, plan.get("seed", 0))
    return [[lengths[i] for i in order.next()] for _ in range(plan["max_steps"] * plan["grad_accum"])]


def ran_masked(plan: dict[str, Any], data: dict[str, Any]) -> Optional[bool]:
    """True where a run's attention got a padding mask that today's zerotui would not give it: files
    without ``padding_masked: false`` ran before collate left the Llama family's padding unmasked
    (2026-12-04, twelfth session, core/data/tokenise.py), and their micro-batches were masked where
    they mixed row lengths. The micro-batches are rebuilt as ``ran_seq_len`` rebuilds them, from the
    rows the file's data had (legacy rows, or ``data_words``-word rows); files with neither ran rows
    that filled every plan. None: the estimator's own rule (core/estimate/job.py attention_masked)."""
    if plan.get("packing") or plan["micro_batch"] < 2 or data.get("padding_masked", True) is False:
        return None
    seq = plan["seq_len"]
    if "data_longest_tokens" not in data:
        lengths = _legacy_lengths(seq)
    elif "data_words" in data:
        lengths = _lengths(data["data_words"], data["data_rows"], seq)
    else:
        return None
    return True if any(min(rows) != max(rows) for rows in _drawn(plan, lengths)) else None


def _legacy_lengths(seq_len: int) -> tuple[int, ...]:
    """The rows every result file before ``data_longest_tokens`` ran on (``row_lengths``)."""
    return _lengths(LEGACY_WORDS, 4000, seq_len)


@functools.lru_cache(maxsize=None)
def _lengths(words: int, rows: int, seq_len: int) -> tuple[int, ...]:
    """The token lengths of ``write_data``'s rows (seeded: the same rows every time), cut at ``seq_len``."""
    with tempfile.TemporaryDirectory(prefix="zt-rows-") as tmp:
        return row_lengths(write_data(Path(tmp) / "data.jsonl", rows=rows, words=words), seq_len)


def write_data(path: Path, rows: int = 4000, words: int = WORDS) -> Path:
    import random

    rng = random.Random(0)
    vocab = "alpha beta gamma delta river stone cloud green table light house water paper bread music".split()
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(rows):
            fh.write(json.dumps({"text": " ".join(rng.choice(vocab) for _ in range(words))}) + "\n")
    return path
