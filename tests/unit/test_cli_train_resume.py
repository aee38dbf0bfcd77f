"""`zerotui train --resume RUN --runs-dir DIR` finds the run in DIR (the option's text once reached the
run lookup as a str, and the command ended in an AttributeError traceback)."""
from __future__ import annotations

from cli_capture import run

from zerotui.core.plan.schema import Plan
from zerotui.core.run.folder import new_run_dir, write_status


def test_resume_finds_the_run_in_the_runs_dir_given(capsys, tmp_path):
    paths = new_run_dir(tmp_path / "runs", "r")
    paths.plan.write_text(Plan(name="r", model="tiny", data="sample", max_steps=5).to_yaml())
    write_status(paths, state="completed", step=5)
    code, _, err = run(capsys, "train", "--resume", paths.name, "--runs-dir", str(tmp_path / "runs"))
    assert "Traceback" not in err and "AttributeError" not in err
    # found, and refused for what it is: a completed run has nothing to resume
    assert code == 2 and f"run {paths.name} completed at step 5; there is nothing to resume" in err


def test_an_empty_runs_dir_is_refused_by_name(capsys, tmp_path):
    code, _, err = run(capsys, "train", "--resume", "r", "--runs-dir", "")
    assert code == 2 and err.count("\n") == 1 and "--runs-dir is empty" in err
