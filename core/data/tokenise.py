"""Tokenised examples in a compact form, and the step from rendered text to input ids + labels.

A ``TokenSet`` keeps every example's ids and labels in two flat int32 tensors plus offsets, so a
million rows cost a few hundred MB rather than Python lists of ints, save to the cache in one
``torch.save`` and slice without copying. A packed set (``pack``) adds one more int64 tensor, the
offset of every document inside the flat ids, from which each packed sequence's position ids are
made at collation; there are no per-token Python lists and no per-token position tensor on disk.

Two collations: ``collate`` for unpacked examples (right padding, a 2D ``attention_mask``), and
``collate_packed`` for packed sequences (position ids restarting at 0 at every document, no
``attention_mask``), from which transformers builds a block-diagonal causal mask; see ``pack`` and
docs/packing.md for what that guarantees.
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
    #: Packed sets only (``pack``): int64, the start of every document in ``ids`` and ``len(ids)`` at
    #: the end; every example (packed sequence) starts at a document, so ``offsets`` is a subset of it.
    #: None: every example is a single document.
    doc_offsets: Optional[torch.Tensor] = None

    def __len__(self) -> int:
        return int(self.offsets.numel()) - 1

    @property
    def packed(self) -> bool:
        return self.doc_offsets is not None

    def example(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.ids[a:b], self.labels[a:b]

    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]

    def documents(self) -> int:
        """How many documents (tokenised rows) the set holds: ``len(self)`` unless packed."""
        return int(self.doc_offsets.numel()) - 1 if self.doc_offsets is not None else len(self)

    def doc_lengths(self, i: int) -> torch.Tensor:
        """int64 lengths of the documents packed into example ``i``, in order (one, unless packed)."""
        a, b = self.offsets[i], self.offsets[i + 1]
        if self.doc_offsets is None:
            return (b - a).reshape(1)
        lo, hi = (int(x) for x in torch.searchsorted(self.doc_offsets, torch.stack([a, b])))
        return self.doc_offsets[lo + 1:hi + 1] - self.doc_offsets[lo:hi]

    def positions(self, i: int) -> torch.Tensor:
        """int64 position ids of example ``i``: 0, 1, ... restarting at every document it holds."""
        n = int(self.offsets[i + 1] - self.offsets[i])
        if self.doc_offsets is None:
            return torch.arange(n, dtype=torch.int64)
        return _positions(self.doc_lengths(i), n)

    def target_tokens(self) -> int:
        return int((self.labels != IGNORE).sum())

    def subset(self, order: Iterable[int]) -> "TokenSet":
        if self.doc_offsets is None:
            return from_examples(self.example(i) for i in order)
        order = list(order)
        out = from_examples(self.example(i) for i in order)
        docs = [self.doc_lengths(i) for i in order]
        lengths = torch.cat(docs) if docs else torch.zeros(0, dtype=torch.int64)
        out.doc_offsets = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
        return out

    def to_dict(self) -> dict[str, torch.Tensor]:
        d = {"ids": self.ids, "labels": self.labels, "offsets": self.offsets}
        if self.doc_offsets is not None:
            d["doc_offsets"] = self.doc_offsets
        return d

    @classmethod
    def from_dict(cls, d: dict[str, torch.Tensor]) -> "TokenSet":
        return cls(d["ids"], d["labels"], d["offsets"], d.get("doc_offsets"))


def _positions(doc_lengths: torch.Tensor, n: int) -> torch.Tensor:
    """0..len-1 for each document of ``doc_lengths`` (summing to ``n``), back to back."""
    starts = torch.cumsum(doc_lengths, 0) - doc_lengths
    return torch.arange(n, dtype=torch.int64) - torch.repeat_interleave(starts, doc_lengths, output_size=n)


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
    limit = char_limit(tokenizer, seq_len)
    for start in range(0, len(rendered), BATCH):
        chunk = rendered[start:start + BATCH]
        encoded: list = [None] * len(chunk)
        for add_special in (True, False):
            idx = [k for k, r in enumerate(chunk) if r.add_special_tokens == add_special]
            if not idx:
                continue
            enc = tokenizer([chunk[k].text[:limit] for k in idx], add_special_tokens=add_special,
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


def char_limit(tokenizer: Any, seq_len: int) -> int:
    """Characters of a row that can reach its first ``seq_len`` tokens, with room to spare: no token
    spans more characters than its vocabulary string has symbols, so a cut at twice (seq_len + 1) times
    the longest leaves those tokens as they were and the row still over seq_len (counted as cut). A
    300 MB row was tokenised whole before: 21 GB resident, and the kernel's OOM killer ended the run."""
    try:
        longest = max((len(t) for t in tokenizer.get_vocab()), default=0)
    except Exception:  # noqa: BLE001 - a tokenizer without a vocabulary to list: no cut
        return 2**62
    return 2 * (seq_len + 1) * max(longest, 16)


def _labels_from_spans(ids: list[int], offsets: list[tuple[int, int]], spans: list[tuple[int, int]]) -> list[int]:
    labels = []
    for tid, (s, e) in zip(ids, offsets):
        # Special tokens added by the tokenizer (BOS) have the empty span (0, 0).
        target = e > s and any(a <= s < b for a, b in spans)
        labels.append(tid if target else IGNORE)
    return labels


def pack(examples: TokenSet, seq_len: int) -> TokenSet:
    """Greedy packing in order: examples are appended to a sequence while they fit, never split.

    Splitting an example across two sequences would train its second half without its prompt. Each
    packed sequence remembers where its documents start (``TokenSet.doc_offsets``), so that
    ``collate_packed`` can give it position ids restarting at 0 at every document; from those,
    transformers builds a block-diagonal causal mask (sdpa, eager) or runs varlen attention (flash), so
    no document attends to another and each sees the positions it would see alone. The label of every
    document's first token is set to IGNORE: unpacked, that label is never a target (nothing precedes
    it), and packed it would make the previous document's last token predict the next document's
    first. The loss of a packed batch is therefore the loss of its documents run one by one.

    No copy of the tokens is made: packing keeps the order, so the packed ids are the examples' ids.
    """
    groups = pack_groups(examples.lengths().tolist(), seq_len)  # one int per example, not per token
    bounds = examples.offsets[groups]
    docs = (examples.doc_offsets if examples.doc_offsets is not None else examples.offsets).clone()
    labels = examples.labels.clone()
    labels[docs[:-1]] = IGNORE
    return TokenSet(examples.ids, labels, bounds.to(torch.int64), docs)


def pack_groups(lengths: list[int], seq_len: int) -> list[int]:
    """Where each packed sequence starts, as example indices, and ``len(lengths)`` at the end: examples
    are appended while they fit (``pack``; ``core/data/flat_store.py`` packs the same way on disk)."""
    groups, used = [0], 0
    for i, n in enumerate(lengths):
        if used + n > seq_len and used:
            groups.append(i)
            used = 0
        used += n
    if len(lengths) > groups[-1]:
        groups.append(len(lengths))
    return groups


def collate(batch: list[tuple[torch.Tensor, torch.Tensor]], pad_id: int, seq_len: int,
            multiple: int = 8, causal: bool = False) -> dict[str, Any]:
    """Pad a micro-batch to its longest example (rounded up to ``multiple``, at most ``seq_len``), or not at
    all when its rows are one length.

    ``causal``: the model's attention is causal and nothing else reads the mask (the Llama family:
    ``core/model/spec.py`` LLAMA_FAMILY), so the padding needs none. It sits after each row's tokens,
    where causal attention never lets a real token see it, and its labels are IGNORE, so the loss and
    every gradient are those of the masked batch (tests/unit/test_causal_padding.py). The batch then
    carries its token count (``TOKEN_COUNT``, no model input) instead of ``attention_mask``. Without a
    mask transformers keeps SDPA's causal path: no (micro-batch, 1, s, s) mask, no copies of the keys
    and values repeated for grouped-query attention (0.5 GiB at 4 x 8,192 tokens on Llama-3.2-1B's
    shape, benchmarks/results/memsnap-1b128k-lora-s8192-2026-12-04.txt), and the flash or cuDNN
    kernels, which a masked step lost 8-24% of its time to (benchmarks/speed/attention_mask.py).

    Padding to the batch rather than to ``seq_len`` is what keeps short-row data fast; the multiple of
    8 keeps matrix shapes friendly to tensor cores. Rows of one length (a micro-batch of one row, or rows
    cut to seq_len) are left as they are: any padding puts zeros in the attention mask, and then
    transformers hands SDPA an explicit 4-D mask instead of its causal path (checked on transformers
    5.17 with a 40-token row and three pad tokens), which a GPU's flash-attention kernel does not take.
    """
    lengths = [len(ids) for ids, _ in batch]
    longest = max(lengths)
    width = min(seq_len, longest if min(lengths) == longest else -(-longest // multiple) * multiple)
    n = len(batch)
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    labels = torch.full((n, width), IGNORE, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for row, (ids, lab) in enumerate(batch):
        k = len(ids)
        input_ids[row, :k] = ids
        labels[row, :k] = lab
        mask[row, :k] = 1
    if causal:
        return {"input_ids": input_ids, "labels": labels, TOKEN_COUNT: int(sum(min(k, width) for k in lengths))}
    return {"input_ids": input_ids, "labels": labels, "attention_mask": mask}


def packing_supported() -> bool:
    """Whether the installed transformers builds per-document masks from ``position_ids``
    (``masking_utils.find_packed_sequence_indices``, transformers >= 4.54): older versions would run
    packed batches with one causal mask across their documents, silently."""
    try:
        from transformers import masking_utils
    except ImportError:
        return False
    return hasattr(masking_utils, "find_packed_sequence_indices")


#: The key of a packed batch that holds its number of non-padding tokens (a Python int). It is no model
#: input: the training loop pops it before the forward (``core/train/loop.py``).
TOKEN_COUNT = "token_count"


def collate_packed(batch: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], pad_id: int, seq_len: int,
                   multiple: int = 8, flash: bool = False) -> dict[str, Any]:
    """A micro-batch of packed sequences ``(ids, labels, position_ids)``, padded as ``collate`` pads.

    There is no ``attention_mask``: transformers' masking (``masking_utils._preprocess_mask_arguments``)
    looks for packed sequences in ``position_ids`` only when the 2D mask is None (and there is no KV
    cache, which ``core/model/load.py`` turns off), then ANDs the causal mask with "same document"
    (``find_packed_sequence_indices``) and, for sdpa and eager, materialises that block-diagonal
    mask. The padding tail of a row is made a document of its own (positions 0, 1, ... again, labels
    IGNORE): it attends only to itself, so it is never a target and changes nothing in the real
    documents, and no attention row is left fully masked.

    ``flash``: flash-attention-2 in transformers reads packed sequences from ``position_ids`` only for
    a batch of one row (``_is_packed_sequence``) and otherwise runs plain causal attention across the
    documents; so the varlen boundaries are passed explicitly as ``cu_seq_lens_q/k`` and
    ``max_length_q/k`` (what ``DataCollatorWithFlattening(return_flash_attn_kwargs=True)`` returns),
    over the row-major flattened batch: every row's documents and its padding tail are one sequence
    each. ``max_length_*`` are Python ints, so flash-attn needs no device sync to read them.
    """
    longest = max(len(ids) for ids, _, _ in batch)
    width = min(seq_len, -(-longest // multiple) * multiple)
    n = len(batch)
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    labels = torch.full((n, width), IGNORE, dtype=torch.long)
    position_ids = torch.arange(width, dtype=torch.long).repeat(n, 1)
    tokens = 0
    for row, (ids, lab, pos) in enumerate(batch):
        k = len(ids)
        input_ids[row, :k] = ids
        labels[row, :k] = lab
        position_ids[row, :k] = pos
        position_ids[row, k:] = torch.arange(width - k)
        tokens += k
    out: dict[str, Any] = {"input_ids": input_ids, "labels": labels, "position_ids": position_ids,
                           TOKEN_COUNT: tokens}
    if flash:
        flat = position_ids.reshape(-1)
        starts = (flat == 0).nonzero().view(-1)
        cu = torch.cat([starts, torch.tensor([flat.numel()])]).to(torch.int32)
        longest_doc = int(cu.diff().max())
        out.update(cu_seq_lens_q=cu, cu_seq_lens_k=cu, max_length_q=longest_doc, max_length_k=longest_doc)
    return out
