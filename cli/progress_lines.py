"""How far a long command is, as lines on stderr (stdout is its result, or the --json document): each
stage as it begins, then a line every tenth of its count and at its end, like the phase lines of `train
--foreground` ("[held-out loss 12/40]"). Lines, not a redrawn counter: they read the same in a log.
`eval` and `merge` use it; both hold library output back, so take the terminal's stderr before that."""
from __future__ import annotations

from typing import TextIO


class ProgressLines:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, stage: str, done: int = 0, total: int = 0) -> None:
        if total <= 0:
            line = f"[{stage}]" if done == 0 else None
        elif done in (0, total) or done % -(-total // 10) == 0:
            line = f"[{stage} {done}/{total}]"
        else:
            line = None
        if line is not None:
            self.out.write(line + "\n")
            self.out.flush()
