"""Tokenised examples in a compact form, and the step from rendered text to input ids + labels.

A ``TokenSet`` keeps every example's ids and labels in two flat int32 tensors plus offsets, so a
million rows cost a few hundred MB rather than Python lists of ints, save to the cache in one
``torch.save`` and slice without copying.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import torch

from zerotui.core.data.prompts import Rendered

IGNORE = -100  # the label PyTorch's cross-entropy (and HF models) skip
#: Rows tokenised per call: the fast tokenizer batches in Rust, larger batches gain little.
BATCH = 512


@dataclass
class TokenSet:
    ids: torch.Tensor       # int32, all examples back to back
    labels: torch.Tensor    # int32, IGNORE where the token is not a target
    offsets: torch.Tensor   # int64, len n+1: example i is ids[offsets[i]:offsets[i+1]]

    def __len__(self) -> int:
        return int(self.offsets.numel()) - 1

    def example(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.ids[a:b], self.labels[a:b]

    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]

    def target_tokens(self) -> int:
        return int((self.labels != IGNORE).sum())

    def subset(self, order: Iterable[int]) -> "TokenSet":
        return from_examples(self.example(i) for i in order)

    def to_dict(self) -> dict[str, torch.Tensor]:
        return {"ids": self.ids, "labels": self.labels, "offsets": self.offsets}

    @classmethod
    def from_dict(cls, d: dict[str, torch.Tensor]) -> "TokenSet":
        return cls(d["ids"], d["labels"], d["offsets"])


def from_examples(examples: Iterable[tuple[Any, Any]]) -> TokenSet:
    ids, labels, offsets = [], [], [0]
    for i, l in examples:
        ids.append(torch.as_tensor(i, dtype=torch.int32))
        labels.append(torch.as_tensor(l, dtype=torch.int32))
        offsets.append(offsets[-1] + len(ids[-1]))
    if not ids:
        empty = torch.zeros(0, dtype=torch.int32)
        return TokenSet(empty, empty.clone(), torch.zeros(1, dtype=torch.int64))
    return TokenSet(torch.cat(ids), torch.cat(labels), torch.tensor(offsets, dtype=torch.int64))


@dataclass
class TokeniseStats:
    truncated: int = 0          # rows cut at seq_len
    no_target: int = 0          # rows whose answer fell entirely beyond seq_len (dropped)


def tokenise(rendered: list[Rendered], tokenizer: Any, seq_len: int, stats: TokeniseStats,
             progress: Optional[Callable[[int], None]] = None) -> list[Optional[tuple[list, list]]]:
    """(ids, labels) for each rendered row, or None for a row with no target token left after the cut.

    Labels come from character spans: a token is a target when it starts inside an answer span, so a
    byte-level token that merges the prompt's last space with the answer's first word is not one.
    """
    out: list[Optional[tuple[list, list]]] = []
    for start in range(0, len(rendered), BATCH):
        chunk = rendered[start:start + BATCH]
        encoded: list = [None] * len(chunk)
        for add_special in (True, False):
            idx = [k for k, r in enumerate(chunk) if r.add_special_tokens == add_special]
            if not idx:
                continue
            enc = tokenizer([chunk[k].text for k in idx], add_special_tokens=add_special,
                            return_offsets_mapping=True, truncation=False)
            for k, ids, offs in zip(idx, enc["input_ids"], enc["offset_mapping"]):
                encoded[k] = (ids, offs)
        for (ids, offs), r in zip(encoded, chunk):
            labels = list(ids) if r.train_all else _labels_from_spans(ids, offs, r.spans)
            if len(ids) > seq_len:
                stats.truncated += 1
                ids, labels = ids[:seq_len], labels[:seq_len]
            if all(l == IGNORE for l in labels[1:]):  # label 0 is never a target after the shift
                stats.no_target += 1
                out.append(None)
            else:
                out.append((ids, labels))
        if progress:
            progress(min(start + BATCH, len(rendered)))
    return out


def _labels_from_spans(ids: list[int], offsets: list[tuple[int, int]], spans: list[tuple[int, int]]) -> list[int]:
    labels = []
    for tid, (s, e) in zip(ids, offsets):
        # Special tokens added by the tokenizer (BOS) have the empty span (0, 0).
        target = e > s and any(a <= s < b for a, b in spans)
        labels.append(tid if target else IGNORE)
    return labels


def pack(examples: TokenSet, seq_len: int) -> TokenSet:
    """Greedy packing in order: examples are appended to a sequence while they fit, never split.

    Splitting an example across two sequences would train its second half without its prompt. The
    packed examples attend to each other (no per-document mask): the usual trade of simple packing,
    harmless for short independent rows, and what keeps every attention kernel usable.
    """
    out: list[tuple[torch.Tensor, torch.Tensor]] = []
    cur_ids: list[torch.Tensor] = []
    cur_labels: list[torch.Tensor] = []
    used = 0
    for i in range(len(examples)):
        ids, labels = examples.example(i)
        if used + len(ids) > seq_len and cur_ids:
            out.append((torch.cat(cur_ids), torch.cat(cur_labels)))
            cur_ids, cur_labels, used = [], [], 0
        cur_ids.append(ids)
        cur_labels.append(labels)
        used += len(ids)
    if cur_ids:
        out.append((torch.cat(cur_ids), torch.cat(cur_labels)))
    return from_examples(out)


def collate(batch: list[tuple[torch.Tensor, torch.Tensor]], pad_id: int, seq_len: int,
            multiple: int = 8) -> dict[str, torch.Tensor]:
    """Pad a micro-batch to its longest example (rounded up to ``multiple``, at most ``seq_len``).

    Padding to the batch rather than to ``seq_len`` is what keeps short-row data fast; the multiple of
    8 keeps matrix shapes friendly to tensor cores.
    """
    longest = max(len(ids) for ids, _ in batch)
    width = min(seq_len, -(-longest // multiple) * multiple)
    n = len(batch)
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    labels = torch.full((n, width), IGNORE, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for row, (ids, lab) in enumerate(batch):
        k = len(ids)
        input_ids[row, :k] = ids
        labels[row, :k] = lab
        mask[row, :k] = 1
    return {"input_ids": input_ids, "labels": labels, "attention_mask": mask}
