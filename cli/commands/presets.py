"""`zerotui presets [--json]`: the built-in and saved presets, with where each lives and what it is for; a
file that cannot be used (unreadable, not a plan, or hidden by a built-in of the same name) is listed with
the reason, never left out."""
from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="print [{name, where, path, description, problem, hidden_by}] as JSON")


def run(args: argparse.Namespace) -> int:
    from zerotui.core.paths import user_presets_dir
    from zerotui.core.plan.presets import list_presets
    from zerotui.core.safe_read import printable

    presets = list_presets(include_hidden=True)
    if args.json:
        print(json.dumps([{"name": p.name, "where": p.where, "path": str(p.path), "description": p.description,
                           "problem": p.problem or None, "hidden_by": str(p.hidden_by.path) if p.hidden_by else None}
                          for p in presets], indent=2))
        return 0
    # Names and descriptions come from files anyone may have put in the folder: one line each, escapes shown.
    names = [printable(p.name) for p in presets]
    width = max((len(n) for n in names), default=4)
    for p, name in zip(presets, names):
        text = " ".join(p.description.split())
        if p.hidden_by is not None:
            text = f"({p.hidden_words()}) {text}".rstrip()
        print(f"{name:<{width}}  {p.where:<8}  {printable(text)}")
    print(f"\nsaved presets live in {user_presets_dir()} (ZEROTUI_PRESETS_DIR overrides); "
          "use one with `zerotui train NAME` or `zerotui export NAME -o DIR`")
    return 0
