"""What a plan command warns about and still does: ds_overrides keys DeepSpeed would ignore
(core/deepspeed/overrides.py, printed by cli/plan_options.py for every command taking a plan), and an
NVMe folder this machine cannot use, for `estimate` and `export`, which may plan for another machine
(core/run/preflight.py; `train` refuses it). Warnings go to stderr, so `--json` stays one document."""
from __future__ import annotations

import json

import pytest
from cli_capture import run

from zerotui.core.deepspeed.overrides import unknown_keys
from zerotui.core.errors import RunError

TYPOS = '{"steps_per_prnt": 5, "gradient_hp_compression": true, "aio": {"block_sise": 1048576}}'


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning: ")]


def test_each_key_deepspeed_would_ignore_is_named_with_the_key_it_likely_meant():
    lines = unknown_keys({
        "steps_per_prnt": 5,                       # a typo of a top-level key
        "gradient_hp_compression": True,           # invented (a widely shared article): nothing close
        "aio": {"block_sise": 1048576, "queue_depth": 8},   # a typo inside a section DeepSpeed reads loosely
        "wall_clock_breakdown": True,              # known: nothing to say
        "activation_checkpointing": {"partition_activations": True},
        "optimizer": {"type": "AdamW", "params": {"betas": [0.9, 0.95], "eps": 1e-6}},  # the optimizer's own
    })
    assert len(lines) == 3, lines
    typo, invented, nested = lines
    assert "'steps_per_prnt'" in typo and "did you mean 'steps_per_print'?" in typo
    assert "'gradient_hp_compression'" in invented and "did you mean" not in invented
    assert "'aio.block_sise'" in nested and "did you mean 'aio.block_size'?" in nested
    assert all("ignored silently" in line and "--ds-overrides or the plan file" in line for line in lines)


def test_estimate_and_export_warn_and_still_do_their_work(capsys, tmp_path):
    code, out, err = run(capsys, "estimate", "tiny-cpu-demo", "--ds-overrides", TYPOS, "--json")
    assert code == 0, err
    assert json.loads(out)["fits"] is True  # stdout is still one JSON document
    said = warnings(err)
    assert len(said) == 3 and "'steps_per_prnt'" in said[0] and "'steps_per_print'" in said[0]
    assert "Traceback" not in err

    code, out, err = run(capsys, "export", "tiny-cpu-demo", "-o", str(tmp_path / "exp"), "--ds-overrides", TYPOS)
    assert code == 0, err
    assert warnings(err) == said  # the same check, so the same words
    written = json.loads((tmp_path / "exp" / "ds_config.json").read_text())
    assert written["steps_per_prnt"] == 5  # a warning, not a refusal: what was asked for is exported


def test_train_warns_about_a_plan_files_overrides_before_it_launches(capsys, tmp_path, monkeypatch):
    from zerotui.core.plan.presets import load_preset
    from zerotui.core.run import start

    plan = load_preset("tiny-cpu-demo").with_changes(ds_overrides={"wall_clock_breakdwn": True})
    (tmp_path / "plan.yaml").write_text(plan.to_yaml())

    def not_launched(*args, **kwargs):
        raise RunError("stopped here by the test", "")

    monkeypatch.setattr(start, "start_run", not_launched)
    code, _, err = run(capsys, "train", str(tmp_path / "plan.yaml"), "--json")
    assert code != 0 and "stopped here by the test" in err
    (line,) = warnings(err)
    assert "'wall_clock_breakdwn'" in line and "did you mean 'wall_clock_breakdown'?" in line


def test_a_refused_override_is_one_error_line_and_no_warning(capsys):
    code, _, err = run(capsys, "estimate", "tiny-cpu-demo", "--ds-overrides", '{"zero_optimization": {"bogus": 1}}')
    assert code == 2 and err.count("\n") == 1 and "bogus" in err and not warnings(err)


@pytest.mark.parametrize("under", [False, True])
def test_an_nvme_folder_that_is_a_file_is_a_warning_for_estimate_and_export(capsys, tmp_path, under):
    blocker = tmp_path / "a-file"
    blocker.write_text("kept")
    path = blocker / "swap" if under else blocker
    nvme = ["--stage", "3", "--offload-optimizer", "nvme", "--nvme-path", str(path)]
    code, out, err = run(capsys, "estimate", "tiny-cpu-demo", *nvme, "--json")
    assert code == 0, err
    json.loads(out)
    (line,) = warnings(err)
    why = f"{path} lies under {blocker}, which is a file" if under else f"{blocker} is a file, not a folder"
    assert why in line and "cannot use it on this machine" in line and "another machine" in line

    code, out, err = run(capsys, "export", "tiny-cpu-demo", "-o", str(tmp_path / "exp"), *nvme)
    assert code == 0 and warnings(err) == [line]
    assert (tmp_path / "exp" / "launch.sh").exists() and blocker.read_text() == "kept"

    code, out, err = run(capsys, "fit", "tiny-cpu-demo", *nvme, "--json")
    assert code in (0, 3) and warnings(err) == [line]


def test_an_nvme_folder_that_can_be_made_is_no_warning(capsys, tmp_path):
    nvme = ["--stage", "3", "--offload-optimizer", "nvme", "--nvme-path", str(tmp_path / "not-yet" / "swap")]
    code, _, err = run(capsys, "estimate", "tiny-cpu-demo", *nvme)
    assert code == 0 and not warnings(err)
    assert not (tmp_path / "not-yet").exists()  # looked at, never made


def test_a_saved_preset_named_like_a_built_in_is_said_to_be_unused_where_the_name_is_used(capsys, tmp_path,
                                                                                          monkeypatch):
    """The built-in wins the name; before, `estimate tiny-cpu-demo` said nothing of the user's own file."""
    folder = tmp_path / "presets"
    folder.mkdir()
    (folder / "tiny-cpu-demo.yaml").write_text("description: my own\nmicro_batch: 2\n")
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(folder))
    code, out, err = run(capsys, "estimate", "tiny-cpu-demo", "--json")
    assert code == 0 and json.loads(out)
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and str(folder / "tiny-cpu-demo.yaml") in notes[0] and "is not used" in notes[0]
    code, out, err = run(capsys, "estimate", str(folder / "tiny-cpu-demo.yaml"), "--json")
    assert code == 0 and "note: " not in err  # by its path the file is used, and nothing needs saying
