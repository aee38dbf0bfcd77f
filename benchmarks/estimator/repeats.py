"""Configurations measured more than once: do their peaks move from run to run?

    python -m benchmarks.estimator.repeats          # markdown table, then a one-line summary

Rows are the committed seed-scenario and sweep rows (margin_rows.py: each a process of its own) grouped
by ``config``: the name, the plan as it ran, the allocator setting and, for the sweeps, whether Adam's
state was made at start. Within a group the plan, the model shape and the harness are the same, so the
estimate is one number and what may differ is only the run. An estimate's error on such rows is the
model's, not noise, where the reserved peaks agree.
"""
from __future__ import annotations

import sys
from collections import defaultdict

from benchmarks.estimator.margin_rows import GIB, seed_rows, sweep_rows
from benchmarks.estimator.margin_table import measured_total, total_error


def groups(rows: list[dict]) -> list[list[dict]]:
    """Rows of one configuration, in file order; only configurations run more than once."""
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        out[r["config"]].append(r)
    return [runs for runs in out.values() if len(runs) > 1]


def main(argv: list[str]) -> int:
    table = groups(seed_rows() + sweep_rows())
    print("| configuration | runs | reserved GiB, lowest–highest | total GiB | estimate's error |")
    print("|---|---|---:|---:|---:|")
    moved = []
    for runs in sorted(table, key=lambda g: (g[0]["source"], g[0]["config"][0])):
        res = [r["reserved"] for r in runs]
        tot = [measured_total(r) for r in runs]
        err = [total_error(r) for r in runs]
        if max(res) - min(res) > 2**20:
            moved.append(runs[0]["config"][0])
        files = ", ".join(r["file"].replace("seed-scenarios-", "").replace(".json", "").replace("-raw.jsonl", "")
                          for r in runs)
        print(f"| {runs[0]['config'][0]} | {len(runs)} ({files}) | {min(res) / GIB:.3f}–{max(res) / GIB:.3f} | "
              f"{min(tot) / GIB:.2f}–{max(tot) / GIB:.2f} | {min(err) * 100:+.1f}% … {max(err) * 100:+.1f}% |")
    print(f"\n{len(table)} configurations run more than once; reserved peak moved by more than 1 MiB in "
          f"{len(moved)}{': ' + ', '.join(moved) if moved else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
