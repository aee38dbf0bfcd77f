"""Every toast whose message is built at run time is shown as written. Textual's notify() reads its message
as markup by default, and a toast quoting a path, a plan error or a run's reason with "[/x]" in it ended the
app with a MarkupError traceback when it drew (seen in a real terminal under tmux; a headless Pilot run
does not draw toasts, hence a check of the source)."""
from __future__ import annotations

import ast

from places import REPO


def test_toasts_with_a_message_built_at_run_time_pass_markup_false():
    unsafe = []
    for f in sorted((REPO / "tui").rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "notify" and node.args):
                continue
            constant = isinstance(node.args[0], ast.Constant)
            off = any(k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False
                      for k in node.keywords)
            if not constant and not off:
                unsafe.append(f"{f.relative_to(REPO)}:{node.lineno}")
    assert unsafe == []
