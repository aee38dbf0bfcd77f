"""`zerotui attach`: which run it picks, and one clear line (exit 2) when it cannot open one."""
from __future__ import annotations

import subprocess
import sys

from dashboard_helpers import make_run


def attach(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zerotui.cli.main", "attach", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)


def test_no_runs_is_one_line_and_exit_2(tmp_path):
    r = attach("--runs-dir", str(tmp_path / "nothing"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"zerotui: no runs in {tmp_path / 'nothing'} (start one with `zerotui train PRESET` or `zerotui`)"]
    assert "Traceback" not in r.stderr


def test_unknown_run_names_what_is_there(tmp_path):
    make_run(tmp_path, "finished.jsonl", name="20260101-000000-alpha", status={"state": "completed"})
    r = attach("beta", "--runs-dir", str(tmp_path))
    assert r.returncode == 2 and "no run named 'beta'" in r.stderr and "zerotui runs" in r.stderr


def test_without_a_terminal_it_says_so_and_names_the_run(tmp_path):
    make_run(tmp_path, "finished.jsonl", name="20260101-000000-alpha", status={"state": "completed"})
    r = attach("--runs-dir", str(tmp_path))  # stdin is /dev/null: no terminal
    assert r.returncode == 2
    assert "needs a terminal (found run 20260101-000000-alpha)" in r.stderr
