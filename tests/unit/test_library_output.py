"""held_back() (cli/library_output.py): the libraries' chatter comes out when something breaks, where it may
say why, but not on Ctrl-C: the user stopped the command, and a screen of loader notices would bury
the one "interrupted" line cli/main.py prints."""
from __future__ import annotations

import sys

import pytest
from cli_capture import run

import zerotui.core.export.merge as merge_module
from zerotui.cli.library_output import held_back
from zerotui.core.errors import RunError
from zerotui.core.run.folder import new_run_dir

NOISE = "[WARNING] [real_accelerator.py:213:get_accelerator] Setting accelerator to CPU."


def _noisy_then(error: BaseException) -> None:
    with held_back():
        print(NOISE)
        sys.stderr.write(NOISE + "\n")
        raise error


def test_ctrl_c_does_not_dump_the_held_output(capsys):
    with pytest.raises(KeyboardInterrupt):
        _noisy_then(KeyboardInterrupt())
    out, err = capsys.readouterr()
    assert out == "" and err == ""


def test_a_refusal_does_not_dump_it_either(capsys):
    with pytest.raises(RunError):
        _noisy_then(RunError("no such run"))
    assert capsys.readouterr() == ("", "")


def test_a_crash_still_shows_it(capsys):
    with pytest.raises(RuntimeError):
        _noisy_then(RuntimeError("a bug"))
    out, err = capsys.readouterr()
    assert out == "" and err.count(NOISE) == 2


def test_ctrl_c_during_a_merge_is_one_line(tmp_path, capsys, monkeypatch):
    def export_run(paths, out, **_options):
        print(NOISE)  # DeepSpeed's logger, while the base loads
        raise KeyboardInterrupt

    paths = new_run_dir(tmp_path / "runs", "m")
    paths.plan.write_text("name: m\n")
    monkeypatch.setattr(merge_module, "export_run", export_run)
    code, out, err = run(capsys, "merge", paths.name, "--runs-dir", str(paths.root.parent), "-o", str(tmp_path / "out"))
    assert code == 130 and out == ""
    assert err == "zerotui: interrupted\n"
