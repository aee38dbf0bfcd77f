"""Run ``zerotui`` in this process and capture what it printed: (exit code, stdout, stderr)."""
from __future__ import annotations

from zerotui.cli.main import main


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as err:  # argparse's own errors
        code = err.code
    out, err = capsys.readouterr()
    return code, out, err
