"""The padding share of unpacked micro-batches (core/data/padding.py) and the packing hint it gives."""
import torch

from zerotui.core.data.padding import HINT_SHARE, packing_hint, padding_share
from zerotui.core.data.tokenise import collate


def _collated_share(lengths: list[int], micro_batch: int, seq_len: int) -> float:
    """The share measured on real collated batches, every consecutive micro-batch of the list."""
    pad = real = 0
    for i in range(0, len(lengths) - micro_batch + 1, micro_batch):
        rows = [(torch.ones(n, dtype=torch.long), torch.ones(n, dtype=torch.long)) for n in lengths[i:i + micro_batch]]
        mask = collate(rows, pad_id=0, seq_len=seq_len)["attention_mask"]
        pad += int((mask == 0).sum())
        real += int(mask.sum())
    return pad / (pad + real)


def test_rows_that_fill_the_sequence_have_no_padding_and_no_hint():
    lengths = torch.full((100,), 512)
    assert padding_share(lengths, 4, 512) == 0.0
    assert packing_hint(lengths, 4, 512) is None


def test_the_share_matches_what_collate_pads():
    # one long row among short ones: every micro-batch holding it pads the others to its width
    lengths = [40, 40, 40, 1000] * 50
    share = padding_share(torch.tensor(lengths), 4, 1024, samples=4096)
    gen = torch.Generator().manual_seed(1)
    shuffled = [lengths[i] for i in torch.randperm(len(lengths), generator=gen).tolist()]
    assert abs(share - _collated_share(shuffled, 4, 1024)) < 0.08
    assert share > 0.5  # most micro-batches of 4 draw the long row at least once
    # all-equal short rows are not padded at all (collate leaves rows of one length as they are)
    assert padding_share(torch.full((64,), 101), 4, 1024) == 0.0
    # two lengths: only micro-batches that mix them pad, to the longer rounded up to 8
    mixed = padding_share(torch.tensor([101, 99] * 32), 4, 1024, samples=4096)
    assert abs(mixed - _collated_share([101, 99] * 32, 4, 1024)) < 0.01 and 0 < mixed < 1 - 99 / 104


def test_a_micro_batch_of_one_is_not_padded():
    """One row needs no padding; rounding it up to 8 would only put zeros in the attention mask."""
    lengths = torch.tensor([17, 300, 5, 1024])
    assert padding_share(lengths, 1, 1024, samples=4096) == 0.0
    assert _collated_share([17, 300, 5, 1024], 1, 1024) == 0.0


def test_the_hint_names_the_share_the_lengths_and_the_option():
    lengths = torch.tensor([30, 60, 900, 45] * 30)
    hint = packing_hint(lengths, 8, 1024)
    assert hint is not None and padding_share(lengths, 8, 1024) >= HINT_SHARE
    assert "packing: true" in hint and "--packing" in hint and "seq_len 1024" in hint
    assert "rows average 259 tokens" in hint and "micro-batches of 8 rows" in hint


def test_empty_data_is_no_padding():
    assert padding_share(torch.tensor([], dtype=torch.long), 4, 128) == 0.0
    assert packing_hint(torch.tensor([], dtype=torch.long), 4, 128) is None


def test_rows_longer_than_seq_len_count_as_cut_and_widths_stop_at_seq_len():
    # tokenised rows never exceed seq_len, but the width is capped even where rounding would pass it
    lengths = torch.tensor([1020, 1020])
    assert padding_share(lengths, 2, 1020) == 0.0  # 1020 rounds to 1024 but the width stops at seq_len
    assert padding_share(torch.tensor([1500, 10]), 2, 1024, samples=4096) > 0.2  # only 1024 of the long row counts


def test_the_hint_starts_at_a_quarter():
    # micro-batches of 2 drawn from equal numbers of short (s) and long (l) rows: a pair holding a long
    # row pads to it, so the share is 1 - (s + l) / (s / 2 + 3 * l / 2)
    under, over = torch.tensor([8, 24] * 50), torch.tensor([8, 56] * 50)  # 1 - 32/40 = 0.20, 1 - 64/88 = 0.27
    assert abs(padding_share(under, 2, 64, samples=20000) - 0.20) < 0.01
    assert abs(padding_share(over, 2, 64, samples=20000) - (1 - 64 / 88)) < 0.01
    assert packing_hint(under, 2, 64) is None and packing_hint(over, 2, 64) is not None
