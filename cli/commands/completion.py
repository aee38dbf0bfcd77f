"""`zerotui completion bash|zsh`: a shell completion script for every command and PLAN OPTION.

The script is generated from the same argparse parser the commands use (so a new Plan field is
completed as soon as it exists) by shtab, which writes static shell code: pressing TAB runs no Python,
where argcomplete would start the interpreter and import every command on each key press.

    zerotui completion bash > ~/.local/share/bash-completion/completions/zerotui
    zerotui completion zsh > ~/.zfunc/_zerotui        # with fpath=(~/.zfunc $fpath) before compinit
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

SHELLS = ("bash", "zsh")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, metavar="|".join(SHELLS), help="the shell to write the script for")


def _preset_completer(names: list[str]) -> dict:
    """A PRESET|PLAN.yaml argument: the preset names known now, and files (a plan .yaml)."""
    words = " ".join(names)
    zsh_words = " ".join(n.replace(":", r"\:") for n in names)
    return {
        "bash": "_zerotui_preset_or_file",
        "zsh": "_zerotui_preset_or_file",
        "preamble": {
            "bash": f'_zerotui_preset_or_file() {{\n  compgen -W "{words}" -- "$1"\n  compgen -f -- "$1"\n}}\n',
            "zsh": (f"_zerotui_preset_or_file() {{\n  _alternative 'presets:preset:({zsh_words})' "
                    "'files:plan file:_files'\n}\n"),
        },
    }


def _tag(parser: argparse.ArgumentParser, presets: dict) -> None:
    """Say what each argument completes to: preset names, folders or files (shtab's ``.complete``)."""
    import shtab

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _tag(sub, presets)
            continue
        metavar = str(action.metavar or "")
        if action.dest in ("source", "plan_preset") or metavar.startswith("PRESET"):
            action.complete = presets  # type: ignore[attr-defined]
        elif "DIR" in metavar or action.dest in ("runs_dir", "plan__runs_dir", "plan__nvme_path"):
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
        elif action.type is Path or metavar in ("PATH", "FILE", "RUN") or metavar.endswith((".json", ".yaml")):
            action.complete = shtab.FILE  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    import shtab
    from zerotui.core.plan.presets import list_presets

    parser = args.whole_parser()  # every command's arguments, not only this one's (cli/main.py)
    _tag(parser, _preset_completer(sorted({p.name for p in list_presets()})))
    # the target shell's name, passed by position: nothing is run in a shell (tests/unit/test_security.py)
    sys.stdout.write(shtab.complete(parser, args.shell))
    return 0
