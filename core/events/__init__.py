"""The event stream of a run: writing and reading ``events.jsonl`` (``stream``), columns for fast
reads, downsampled series, a run's whole history for dashboards and its reader/follower, and the
rule that drops steps a resumed worker redid.

May import: the base modules only. Readers of events never estimate, plan or train.
"""
