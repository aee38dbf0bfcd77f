"""`zerotui train --foreground --json` with the real engine: the tiny model on the CPU for one step, the
live lines on stderr and, once the run has ended, one JSON object on stdout that agrees with the run folder."""
from __future__ import annotations

import json
import math
import subprocess
import sys

from run_events import events
from zerotui.core.run.folder import RunPaths, run_state


def test_train_foreground_json_is_the_runs_end_as_one_object(tmp_path):
    runs = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "train", "--model", "tiny", "--data", "sample",
                        "--stage", "2", "--micro-batch", "2", "--seq-len", "64", "--max-steps", "1",
                        "--log-interval", "1", "--save-interval", "0", "--save-minutes", "0", "--eval-fraction", "0",
                        "--no-save-final", "--max-samples", "40", "--runs-dir", str(runs), "--foreground", "--json"],
                       check=False, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    doc = json.loads(r.stdout)  # the whole of stdout: nothing else was printed there
    (paths,) = [RunPaths(p) for p in runs.iterdir()]
    (step,) = events(paths, "step")
    (end,) = events(paths, "run_finished")
    assert (doc["run"], doc["path"], doc["resumed"]) == (paths.name, str(paths.root), False)
    assert doc["state"] == end["state"] == run_state(paths) == "completed"
    assert doc["step"] == doc["total_steps"] == step["step"] == 1 and doc["exit_code"] == 0 and "error" not in doc
    assert math.isfinite(doc["loss"]) and doc["loss"] == step["loss"] and doc["reason"] == end["reason"]
    assert "step 1/1  loss" in r.stderr and "run completed" in r.stderr  # the live lines, for a person
