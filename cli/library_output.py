"""What libraries print while a model loads (DeepSpeed's accelerator notice, zero_to_fp32's progress,
transformers' bars and deprecation warnings), held back from the terminal.

``chat``, ``eval`` and ``merge`` print an answer on stdout and, on a mistake, one line on stderr; a dozen
lines of loader chatter around it would bury it. The held text is shown only when something fails that is
not the user's mistake (a bug to report), where it may say why. Ctrl-C is neither: the user chose to
stop, and the loader's chatter would bury the one line ``cli/main.py`` prints for it ("interrupted").
"""
from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def held_back() -> Iterator[io.StringIO]:
    from zerotui.core.errors import ZeroTuiError

    held = io.StringIO()
    try:
        with contextlib.redirect_stdout(held), contextlib.redirect_stderr(held):
            yield held
    except (ZeroTuiError, KeyboardInterrupt):
        raise
    except BaseException:
        sys.stderr.write(held.getvalue())
        raise
