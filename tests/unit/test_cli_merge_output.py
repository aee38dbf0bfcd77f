"""`zerotui merge`: what the libraries print while it loads and writes weights (DeepSpeed's accelerator
notice, bitsandbytes' kernel lookup, transformers' warnings) stays off the terminal; a crash still shows
it, since it may say why. The merge itself is replaced here: what matters is what reaches the terminal."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_capture import run

import zerotui.core.export.merge as merge_module
from zerotui.core.errors import RunError
from zerotui.core.export.merge import MergeResult
from zerotui.core.run.folder import new_run_dir

ACCELERATOR = "[WARNING] [real_accelerator.py:213:get_accelerator] Setting accelerator to CPU."
GEMM = "Failed to load CPU gemm_4bit_forward from kernels-community: Kernel repository could not verify"


def _noisy(then=None):
    def export_run(paths, out, **_options):
        print(ACCELERATOR)  # DeepSpeed's logger writes to stdout
        sys.stderr.write(GEMM + "\n")  # bitsandbytes, through logging's last-resort handler
        if then is not None:
            raise then
        return MergeResult(Path(out), "safetensors", "fp32", "final", {"model.safetensors": 2048})
    return export_run


@pytest.fixture
def a_run(tmp_path):
    paths = new_run_dir(tmp_path / "runs", "q")
    paths.plan.write_text("name: q\n")
    return paths


def _merge(capsys, paths, *extra):
    return run(capsys, "merge", paths.name, "--runs-dir", str(paths.root.parent),
               "-o", str(paths.root.parent.parent / "out"), *extra)


@pytest.mark.parametrize("as_json", [False, True])
def test_library_chatter_is_held_back(monkeypatch, capsys, a_run, as_json):
    monkeypatch.setattr(merge_module, "export_run", _noisy())
    code, out, err = _merge(capsys, a_run, *(["--json"] if as_json else []))
    assert code == 0
    assert err == ""  # before: the accelerator notice and the gemm_4bit line
    if as_json:
        import json

        assert json.loads(out)["format"] == "safetensors"
    else:
        assert out.startswith(f"merged {a_run.name} → ") and out.count("\n") == 1


def test_a_refusal_is_one_line(monkeypatch, capsys, a_run):
    monkeypatch.setattr(merge_module, "export_run", _noisy(RunError("the output folder is on a full disk", "free some")))
    code, out, err = _merge(capsys, a_run)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "full disk" in err and GEMM not in err


def test_a_crash_shows_what_the_libraries_said(monkeypatch, capsys, a_run):
    monkeypatch.setattr(merge_module, "export_run", _noisy(RuntimeError("shape mismatch in q_proj")))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        _merge(capsys, a_run)
    err = capsys.readouterr().err
    assert GEMM in err and ACCELERATOR in err  # a bug to report: the held text may say why


def test_the_merges_own_stages_reach_the_terminal_and_the_chatter_does_not(monkeypatch, capsys, a_run):
    """With the libraries held back a 70B merge would be silent for many minutes: its stages are said."""
    def export_run(paths, out, stage=None, **_options):
        stage("merging the adapters into the base model")
        print(ACCELERATOR)
        stage("loading the written model back to check it")
        return MergeResult(Path(out), "safetensors", "fp32", "final", {"model.safetensors": 2048})

    monkeypatch.setattr(merge_module, "export_run", export_run)
    code, out, err = _merge(capsys, a_run, "--json")
    assert code == 0 and json.loads(out)["format"] == "safetensors"
    assert err.splitlines() == ["[merging the adapters into the base model]",
                                "[loading the written model back to check it]"]
