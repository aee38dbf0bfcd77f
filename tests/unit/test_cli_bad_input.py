"""Malformed input through the real `zerotui` command: exit code 2, exactly one line on stderr naming the
field or the problem, never a traceback, and nothing written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest


def setup_files(root: Path) -> None:
    (root / "bad.yaml").write_text("model: tiny\nstage: 2: 3\nseed: 1\n")
    (root / "unknown.yaml").write_text("model: tiny\nmicro_bach: 2\n")
    (root / "wrongtype.yaml").write_text("micro_batch: lots\n")
    (root / "list.yaml").write_text("- model\n- tiny\n")
    (root / "empty.yaml").write_text("")
    (root / "latin1.yaml").write_bytes("description: caf\xe9\n".encode("latin-1"))
    (root / "folder.yaml").mkdir()
    (root / "list.json").write_text("[1, 2, 3]\n")
    (root / "broken.json").write_text('{"train_batch_size": 8,\n "zero_optimization": {"stage": 3\n')
    (root / "nvme.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {
        "stage": 3, "offload_optimizer": {"device": "nvme"}}}))
    (root / "ok.json").write_text('{"train_micro_batch_size_per_gpu": 1}')
    (root / "taken").mkdir()
    (root / "taken" / "ds_config.json").write_text("{}\n")
    (root / "existing.yaml").write_text("keep me\n")


EXPORT = ["export", "tiny-cpu-demo", "-o", "out"]

# (argv, words the stderr line must contain)
CASES = [
    (["export", "--plan", "bad.yaml", "-o", "out"], ["bad.yaml", "line 2"]),
    (["export", "--plan", "unknown.yaml", "-o", "out"], ["unknown key 'micro_bach'", "micro_batch"]),
    (["export", "--plan", "wrongtype.yaml", "-o", "out"], ["micro_batch", "'lots'"]),
    (["export", "--plan", "list.yaml", "-o", "out"], ["list.yaml", "mapping"]),
    (["export", "--plan", "empty.yaml", "-o", "out"], ["empty.yaml", "empty"]),
    (["export", "--plan", "latin1.yaml", "-o", "out"], ["latin1.yaml", "UTF-8"]),
    (["export", "--plan", "folder.yaml", "-o", "out"], ["folder.yaml", "folder"]),
    (["export", "--plan", "missing.yaml", "-o", "out"], ["missing.yaml", "no such file"]),
    (["export", "no-such-preset", "-o", "out"], ["unknown preset 'no-such-preset'", "tiny-cpu-demo"]),
    ([*EXPORT, "--offload-params", "cpu"], ["offload_params", "stage 3"]),
    ([*EXPORT, "--stage", "3", "--offload-optimizer", "nvme"], ["nvme_path", "--nvme-path"]),
    ([*EXPORT, "--micro-batch", "-1"], ["micro_batch", "-1"]),
    ([*EXPORT, "--micro-batch", "two"], ["--micro-batch", "'two'"]),
    ([*EXPORT, "--stage", "5"], ["--stage", "5"]),
    ([*EXPORT, "--precision", "fp8"], ["--precision", "fp8"]),
    ([*EXPORT, "--method", "lora", "--lora-targets", " , "], ["lora_targets"]),
    ([*EXPORT, "--gpu-ids", "0,x"], ["--gpu-ids", "0,x"]),
    ([*EXPORT, "--ds-overrides", "{bad json"], ["--ds-overrides", "JSON"]),
    ([*EXPORT, "--ds-overrides", "[1]"], ["--ds-overrides", "object"]),
    ([*EXPORT, "--ds-overrides", '{"train_batch_size": 64}'], ["train_batch_size", "--micro-batch"]),
    ([*EXPORT, "--gpus", "0"], ["gpus", "0"]),
    ([*EXPORT, "--nodes", "2"], ["nodes=2", "--hostfile"]),
    ([*EXPORT, "--precision", "fp16", "--fp16-min-loss-scale", "0.5"], ["fp16_min_loss_scale"]),
    (["export", "tiny-cpu-demo", "-o", "taken"], ["ds_config.json", "--force"]),
    (["export", "tiny-cpu-demo", "-o", "existing.yaml"], ["existing.yaml", "not a folder"]),
    (["export", "-o", "out"], ["preset name or a plan file"]),
    (["export", "tiny-cpu-demo"], ["-o"]),
    (["import", "list.json"], ["list.json", "got a list"]),
    (["import", "broken.json"], ["broken.json", "line 3"]),
    (["import", "missing.json"], ["missing.json", "no such file"]),
    (["import", "folder.yaml"], ["folder.yaml", "folder"]),
    (["import", "latin1.yaml"], ["latin1.yaml", "UTF-8"]),
    (["import", "nvme.json", "-o", "plan.yaml"], ["nvme_path", "--nvme-path"]),
    (["import", "ok.json", "-o", "existing.yaml"], ["existing.yaml", "already exists"]),
    (["import", "ok.json", "--stage", "9"], ["--stage", "9"]),
    # An empty value (an unset shell variable): "" is Path("."), and `train --runs-dir ""` wrote its run
    # into the current folder; `merge ""` merged the newest run
    (["train", "tiny-cpu-demo", "--runs-dir", ""], ["runs_dir is empty"]),
    ([*EXPORT, "--stage", "3", "--offload-optimizer", "nvme", "--nvme-path", ""], ["nvme_path is empty"]),
    (["runs", "--runs-dir", ""], ["--runs-dir", "is empty"]),
    (["merge", "some-run", "-o", ""], ["-o/--output", "is empty"]),
    (["resume", "", "--runs-dir", "."], ["the run's name is empty"]),
    (["merge", "", "-o", "out", "--runs-dir", "."], ["the run's name is empty"]),
    # A value starting with '-' that is not a plain number: argparse said only "expected one argument"
    ([*EXPORT, "--gpu-mem-cap", "-5GB"], ["gpu_mem_cap '-5GB' is not a size"]),
    ([*EXPORT, "--lr", "-1e-3"], ["field 'lr'", "greater than 0", "-0.001"]),
]


@pytest.mark.parametrize("argv, words", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_nothing_written(argv, words, zerotui_cli, tmp_path):
    setup_files(tmp_path)
    before = {p: (p.read_bytes() if p.is_file() else None) for p in tmp_path.rglob("*")}
    r = zerotui_cli(*argv)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for w in words:
        assert w in lines[0], (w, lines[0])
    after = {p: (p.read_bytes() if p.is_file() else None) for p in tmp_path.rglob("*")}
    # The user presets / runs folders may be created empty; no file may appear or change.
    assert {p: v for p, v in after.items() if v is not None} == {p: v for p, v in before.items() if v is not None}


def test_there_are_at_least_fifteen_cases():
    assert len(CASES) >= 15


def test_export_force_replaces_and_a_good_export_still_works(zerotui_cli, tmp_path):
    setup_files(tmp_path)
    r = zerotui_cli("export", "tiny-cpu-demo", "-o", "taken", "--force")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "taken" / "ds_config.json").read_text())["train_micro_batch_size_per_gpu"] == 8


def test_every_commands_help_reads_as_words():
    """A '%' in a plan field's description ("~30% slower") made argparse print its own dict of the option
    into `zerotui train --help`; every command's help must format cleanly."""
    from zerotui.cli.main import COMMANDS, _subparser, build_parser

    parser = build_parser()
    for name in COMMANDS:
        text = _subparser(parser, name).format_help()
        assert "option_strings" not in text and "%(" not in text, (name, text[:400])
    train = _subparser(parser, "train").format_help()
    assert "~30% slower" in " ".join(train.split())
