"""``zerotui --runs-dir DIR``: the wizard took no runs folder on its command line (argparse answered
"invalid choice: '/tmp/x'" as if it were a command); now it does, and hands it on as $ZEROTUI_RUNS_DIR."""
from __future__ import annotations

import json
import os

import pytest
from cli_capture import run

from zerotui.core.run.folder import new_run_dir, write_status


@pytest.fixture(autouse=True)
def _own_env(monkeypatch, tmp_path):
    monkeypatch.setenv("ZEROTUI_RUNS_DIR", str(tmp_path / "default-runs"))


def test_the_wizard_opens_on_the_folder_given(capsys, monkeypatch, tmp_path):
    seen = {}

    def fake_wizard(preset=None):
        seen["runs"] = os.environ["ZEROTUI_RUNS_DIR"]
        return 0

    monkeypatch.setattr("zerotui.tui.launch.run_wizard", fake_wizard)
    code, out, err = run(capsys, "--runs-dir", str(tmp_path / "mine"))
    assert code == 0, err
    assert seen["runs"] == str(tmp_path / "mine")


def test_a_command_after_it_reads_the_same_folder(capsys, tmp_path):
    paths = new_run_dir(tmp_path / "mine", "demo")
    paths.plan.write_text("name: demo\n")
    write_status(paths, state="completed", pid=None, pids=[], step=3, total_steps=3)
    code, out, err = run(capsys, "--runs-dir", str(tmp_path / "mine"), "runs", "--json")
    assert code == 0, err
    assert [r["path"] for r in json.loads(out)] == [str(paths.root)]


def test_a_file_is_refused_in_one_line(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    code, out, err = run(capsys, "--runs-dir", str(tmp_path / "f"))
    assert code == 2
    assert err.strip().splitlines() == [f"zerotui: --runs-dir {tmp_path / 'f'} is not a folder (give a folder; it "
                                        "is made if missing)"]
