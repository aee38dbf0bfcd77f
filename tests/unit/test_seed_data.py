"""The seed scenarios' data (benchmarks/seed_scenarios/data.py) and the micro-batch width the estimator's
rows are estimated for (data.py's ran_seq_len). Until the ninth session the
harness wrote rows of about 3,650 tokens, so its 4,096-token plans ran narrower micro-batches than they
named, and their estimates were judged for tokens that never ran."""
from __future__ import annotations

import sys

from places import REPO

sys.path.insert(0, str(REPO))

from benchmarks.seed_scenarios.data import LEGACY_WORDS, ran_seq_len, row_lengths, write_data  # noqa: E402
from benchmarks.seed_scenarios.scenarios import SCENARIOS  # noqa: E402


def test_every_row_fills_the_longest_scenario_sequence(tmp_path):
    """Rows are cut to seq_len, never padded past what they hold: each must be at least as long as the
    longest plan asks for, or that plan runs narrower than its estimate says (the first 40 rows of the
    same generator; the words a row are fixed, so lengths vary by a few percent only)."""
    longest_plan = max(fields["seq_len"] for _, fields, _ in SCENARIOS.values())
    assert longest_plan >= 4096
    assert min(row_lengths(write_data(tmp_path / "d.jsonl", rows=40))) >= longest_plan


def test_the_legacy_rows_were_shorter_than_4096_tokens(tmp_path):
    """What every result file before data_longest_tokens ran on: 3,539-3,763 tokens a row."""
    lengths = row_lengths(write_data(tmp_path / "d.jsonl", rows=4000, words=LEGACY_WORDS))
    assert (min(lengths), max(lengths)) == (3539, 3763)


def test_ran_seq_len_is_the_widest_micro_batch_the_run_drew():
    """1b128k-full-ho56 (2 x 1 x 4,096, 4 steps, seed 1) drew micro-batches whose longest rows were 3,652,
    3,650, 3,716 and 3,647 tokens: 3,720 wide at most. Its allocator history has the first one, 7,312
    tokens in two rows (3,656: 3,652 rounded up to 8; memsnap-1b128k-ho56-2026-12-04.txt)."""
    ho56 = {"seq_len": 4096, "micro_batch": 2, "grad_accum": 1, "max_steps": 4, "seed": 1}
    assert ran_seq_len(ho56, {}) == 3720
    assert ran_seq_len({**ho56, "max_steps": 1}, {}) == 3656  # the first micro-batch alone
    assert ran_seq_len({**ho56, "seq_len": 2048}, {}) == 2048  # every legacy row is cut to 2,048
    assert ran_seq_len({**ho56, "packing": True}, {}) == 3720  # two ~3,600-token rows never share 4,096
    assert ran_seq_len({**ho56, "packing": True, "seq_len": 8192}, {}) == 8192  # ... but fill 8,192
    assert ran_seq_len(ho56, {"data_longest_tokens": 7801}) == 4096  # the new rows fill the sequence
    assert ran_seq_len({**ho56, "seq_len": 8192}, {"data_longest_tokens": 7801}) == 7808
