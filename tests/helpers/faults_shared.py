"""Faults during a run, fast enough for CI (docs/reliability.md lists the slower, repeated scripts in
scripts/faults/ and their figures).

* kill -9 of a real worker process at random steps, resumed each time: the event stream continues from
  the checkpoint, and readers drop the superseded reports of the redone steps (core/events/superseded.py);
* the events file truncated under a follower, ``zerotui runs`` and the dashboard's reader, also when it
  grows back past a follower's offset between two polls;
* a resume refused, with one clear line, when the data file is gone;
* the dashboard's terminal killed (tmux), the worker untouched;
* a checkpoint write that failed on a full disk lets go of its files (the space comes back);
* slow (real DeepSpeed): kill -9 and resume of the engine itself; an fp16 overflow storm and a run of
  non-finite losses ending in a clean stop that resumes from a checkpoint before the first bad step.

The worker tests run ``core/run/worker.py``'s real process with ``tests/worker_helpers.py``'s small real torch
loop (the engine's contract, seconds instead of DeepSpeed's start-up); the slow ones run the real engine.
"""
from __future__ import annotations





