"""`zerotui completion bash|zsh`: the script, loaded into the real shell, completes commands, PLAN
OPTIONS, their choices and preset names (tests/helpers/complete_*.sh drive bash and zsh as on TAB)."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from places import TESTS
from zerotui.cli.main import build_parser

CASES = [
    ("zerotui est", ["estimate"]),
    ("zerotui estimate --offload-o", ["--offload-optimizer"]),
    ("zerotui estimate --offload-optimizer ", ["none", "cpu", "nvme"]),
    ("zerotui fit --stage ", ["0", "1", "2", "3"]),
    ("zerotui train tiny-", ["tiny-cpu-demo"]),
    ("zerotui completion ", ["bash", "zsh"]),
    ("zerotui stop --j", ["--json"]),
    ("zerotui train --method ", ["full", "lora", "qlora"]),
    ("zerotui merge --format ", ["safetensors", "bnb-4bit", "gguf"]),
    ("zerotui export tiny-cpu-demo -o out --j", ["--json"]),
    ("zerotui doctor --build-ops --j", ["--json"]),
]


def script(shell: str) -> str:
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "completion", shell], check=False, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory):
    path = tmp_path_factory.mktemp("bash") / "zerotui"
    path.write_text(script("bash"))
    return path


@pytest.fixture(scope="module")
def zsh_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zsh")
    (folder / "_zerotui").write_text(script("zsh"))
    return folder


@pytest.mark.parametrize("line,want", CASES)
def test_bash_completes(bash_script, line, want):
    r = subprocess.run(["bash", str(TESTS / "helpers" / "complete_bash.sh"), str(bash_script), line],
                       check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert set(want) <= set(r.stdout.split()), r.stdout


@pytest.mark.skipif(shutil.which("zsh") is None,
                    reason="no zsh: `scripts/setup.sh --test` installs Debian's zsh with apt (root or sudo)")
@pytest.mark.parametrize("line,want", CASES)
def test_zsh_completes(zsh_folder, line, want):
    r = subprocess.run(["zsh", "-f", str(TESTS / "helpers" / "complete_zsh.zsh"), str(zsh_folder), line],
                       check=False, capture_output=True, text=True, timeout=60)
    assert set(want) <= set(r.stdout.split()), (r.stdout, r.stderr)


def test_every_plan_option_is_in_the_script(bash_script):
    text = bash_script.read_text()
    parser = build_parser(only=None)
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    flags = [s for a in sub.choices["estimate"]._actions for s in a.option_strings]
    assert "--offload-params" in flags and "--ds-overrides" in flags
    assert [f for f in flags if f not in text] == []
    assert "python" not in text.lower()  # static: pressing TAB starts no interpreter


def _subparsers():
    parser = build_parser(only=None)
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sub.choices


def test_every_command_and_every_flag_of_each_is_in_the_script(bash_script):
    text = bash_script.read_text()
    missing = [f"{name} {flag}" for name, p in _subparsers().items() for a in p._actions for flag in a.option_strings
               if flag not in text]
    assert missing == []
    r = subprocess.run(["bash", str(TESTS / "helpers" / "complete_bash.sh"), str(bash_script), "zerotui "],
                       check=False, capture_output=True, text=True, timeout=60)
    assert set(_subparsers()) <= set(r.stdout.split()), r.stdout  # TAB after `zerotui ` offers every command


def _choice_options():
    """Every option with a fixed set of values, of every command: plan options from the Plan's Literal
    fields (--method, --precision, --attention, ...) and the commands' own (merge --format, ...)."""
    seen = {}
    for name, p in _subparsers().items():
        for a in p._actions:
            if a.choices and a.option_strings and (a.option_strings[-1] not in seen or name == "estimate"):
                seen[a.option_strings[-1]] = (name, [str(c) for c in a.choices])
    return sorted((name, flag, choices) for flag, (name, choices) in seen.items())


def test_enum_options_are_many():
    flags = {flag for _, flag, _ in _choice_options()}
    assert {"--method", "--precision", "--offload-params", "--attention", "--lr-schedule", "--data-format",
            "--quant-type", "--format", "--dtype"} <= flags


@pytest.mark.parametrize("command,flag,choices", _choice_options())
def test_an_enum_option_completes_its_values(bash_script, command, flag, choices):
    r = subprocess.run(["bash", str(TESTS / "helpers" / "complete_bash.sh"), str(bash_script),
                        f"zerotui {command} {flag} "], check=False, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == sorted(choices), r.stdout


def test_unknown_shell_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "zerotui.cli.main", "completion", "fish"], check=False, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == "" and "bash|zsh" in r.stderr and len(r.stderr.splitlines()) == 1
