"""The ``zerotui`` command: the wizard with no arguments, headless subcommands otherwise.

Each subcommand lives in ``cli/commands/<name>.py`` with ``add_arguments(parser)`` and ``run(args) -> int``
and is imported only when chosen, so ``zerotui doctor`` never pays for textual and ``zerotui`` (the
wizard) never pays for torch before it needs it.

Every user mistake ends as one line on stderr and exit code 2; a traceback is a bug.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys
from typing import Optional, Sequence

# name -> one-line help; the module is zerotui.cli.commands.<name with - as _>, except where MODULES says
# otherwise (a command whose name is a Python keyword)
COMMANDS: dict[str, str] = {
    "doctor": "report GPUs, RAM, disks, library versions, DeepSpeed ops and known pitfalls",
    "estimate": "memory budget of a plan: GPU, CPU RAM and NVMe, with a breakdown",
    "fit": "configurations that fit this machine, fastest first",
    "export": "write ds_config.json and launch.sh for the plain deepspeed CLI",
    "import": "turn an existing ds_config.json into a plan, with warnings",
    "presets": "list the built-in and saved presets",
    "train": "start a run (detached unless --foreground)",
    "runs": "list runs with state, step, loss and age",
    "attach": "open the dashboard on a live or finished run",
    "stop": "stop a run gracefully with a checkpoint (--now: at once)",
    "resume": "continue a run from its last complete checkpoint",
    "spare": "keep a worker with its libraries imported for the next run (start, stop, list)",
    "merge": "LoRA merged into the base, or ZeRO shards consolidated, as a Hugging Face model",
    "chat": "talk to a run's model (final/ or a checkpoint), streamed; --prompt for one answer",
    "eval": "score a finished run on its held-out split: perplexity, ROUGE-L; added to its events",
    "serve": "the dashboard in a browser (read-only unless --allow-control)",
    "sweep": "search hyper-parameters with Optuna: one short run per trial, pruned on eval loss",
    "completion": "print a bash or zsh completion script for every command and plan option",
}

#: Commands whose module is not named after them: ``import`` is a keyword.
MODULES: dict[str, str] = {"import": "import_config"}

EXIT_USAGE = 2


class UsageExit(SystemExit):
    """argparse's exit for a usage error, carrying its one line (for --json's error document)."""

    def __init__(self, line: str) -> None:
        super().__init__(EXIT_USAGE)
        self.line = line


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus an error over several lines; users get one line that names the option."""

    def error(self, message: str) -> "None":  # type: ignore[override]
        if len(message) > 400:  # argparse quotes the value: a 5,001-digit --seq-len is not worth a 5 KB line
            message = message[:397] + "..."
        line = f"{self.prog}: {message} (see `{self.prog} --help`)"
        sys.stderr.write(line + "\n")
        raise UsageExit(line)


def _command_module(name: str):
    module = MODULES.get(name, name.replace('-', '_'))
    return importlib.import_module(f"zerotui.cli.commands.{module}")


def build_parser(only: Optional[str] = None) -> OneLineParser:
    """The parser; with ``only``, just that subcommand's arguments are loaded (fast start-up)."""
    parser = OneLineParser(
        prog="zerotui",
        description="Plan, launch and watch DeepSpeed ZeRO fine-tunes. With no command, opens the wizard.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--preset", metavar="NAME", help="open the wizard on the review of this preset")
    parser.add_argument("--runs-dir", dest="top_runs_dir", metavar="DIR",
                        help="the wizard's runs folder (as $ZEROTUI_RUNS_DIR; commands take their own --runs-dir)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    for name, help_ in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        if only is None or only == name:
            _command_module(name).add_arguments(p)
        if name == "completion":
            # The script covers every command: the command gets this builder, as commands may not import main.
            p.set_defaults(whole_parser=lambda: build_parser(only=None))
    return parser


def _subparser(parser: argparse.ArgumentParser, name: str) -> Optional[argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name)
    return None


def _negative_values(argv: list[str]) -> list[str]:
    """``--gpu-mem-cap -5GB`` as ``--gpu-mem-cap=-5GB``: argparse takes a value that starts with '-' and
    is not a plain number for an option, and said only "expected one argument"; joined, the value reaches
    the plan's own check, which says what is wrong with it."""
    out: list[str] = []
    for token in argv:
        prev = out[-1] if out else ""
        if re.match(r"-\d", token) and prev.startswith("--") and "=" not in prev and prev != "--":
            out[-1] = f"{prev}={token}"
        else:
            out.append(token)
    return out


def _use_runs_dir(folder: str) -> None:
    """``zerotui --runs-dir DIR``: the runs folder for whatever follows, through the variable every part
    reads (core/paths.py), so the wizard, its dashboard and the runs it launches agree on it."""
    from zerotui.core.errors import PlanError

    path = os.path.abspath(os.path.expanduser(folder))
    if os.path.exists(path) and not os.path.isdir(path):
        raise PlanError(f"--runs-dir {folder} is not a folder", "give a folder; it is made if missing")
    os.environ["ZEROTUI_RUNS_DIR"] = path


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = _negative_values(list(sys.argv[1:] if argv is None else argv))
    from zerotui.cli.json_result import error_document, print_json, wants_json
    from zerotui.core.errors import ZeroTuiError

    chosen = next((a for a in argv if a in COMMANDS), None)
    # Help for the whole program imports every command's arguments; anything else only the chosen one.
    only = None if (chosen is None and any(a in ("-h", "--help") for a in argv)) else chosen
    parser = build_parser(only=only or "__none__")
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            # The top parser would report these as `zerotui: unrecognized arguments` and point at
            # `zerotui --help`; the subcommand's own help is the one that lists its options.
            sub = _subparser(parser, args.command) if args.command else None
            (sub or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    except UsageExit as usage:
        if wants_json(argv):
            print_json(error_document(usage.line, EXIT_USAGE))
        raise
    as_json = wants_json(argv, args)
    try:
        if args.version:
            from importlib.metadata import version

            print(f"zerotui {version('zerotui')}")
            return 0
        if args.top_runs_dir:
            _use_runs_dir(args.top_runs_dir)
        if args.command is None:
            from zerotui.tui.launch import run_wizard

            return run_wizard(preset=args.preset)
        return int(_command_module(args.command).run(args) or 0)
    except ZeroTuiError as err:
        sys.stderr.write(f"zerotui: {err.one_line()}\n")
        if as_json:
            print_json(error_document(err.one_line(), err.exit_code, field=err.field))
        return err.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("zerotui: interrupted\n")
        if as_json:
            print_json(error_document("interrupted", 130))
        return 130
    except BrokenPipeError:
        # `zerotui runs | head` closes the pipe early: not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as err:
        # A full disk, a folder turned read-only under a run: the machine's doing, not the input's, so
        # exit 1 (not 2), and one line naming the file instead of a traceback.
        where = f"{err.filename}: " if err.filename else ""
        hint = _OS_HINTS.get(err.errno or 0, "")
        line = f"{where}{err.strerror or err}" + (f" ({hint})" if hint else "")
        sys.stderr.write(f"zerotui: {line}\n")
        if as_json:
            print_json(error_document(line, 1, path=err.filename))
        return 1


#: What a user can do about the system errors that reach the top; others (an address in use, a name too
#: long) are shown as they are, without a hint that does not apply.
_OS_HINTS = {errno.ENOSPC: "free some space, then run the command again",
             errno.EDQUOT: "free some space within your quota, then run the command again",
             errno.EROFS: "the file system is read-only: use a folder on a writable disk",
             errno.EACCES: "fix the permissions, then run the command again",
             errno.EPERM: "fix the permissions, then run the command again",
             errno.EADDRINUSE: "another program listens on that port: choose another with --port"}


if __name__ == "__main__":
    sys.exit(main())
