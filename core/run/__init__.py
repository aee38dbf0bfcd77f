"""A run on disk and in processes: the run folder and status (``folder``), starting and resuming with
preflight checks (``start``, ``inputs``), the launcher argv (``launcher``), the worker process and what
its main thread watches (``worker``, ``inbox``, ``monitor``), the supervisor that owns a run's end
(``supervisor``, ``rank_records``, ``deathwatch``), and one-line overviews for run lists.

May import: ``train``, ``estimate``, ``events`` and everything below them.
"""
