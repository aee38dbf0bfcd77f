"""`zerotui presets [--json]`: the built-in and saved presets, with where each lives and what it is for."""
from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print [{name, where, path, description}] as JSON")


def run(args: argparse.Namespace) -> int:
    from zerotui.core.paths import user_presets_dir
    from zerotui.core.plan.presets import list_presets

    presets = list_presets()
    if args.json:
        print(json.dumps([{"name": p.name, "where": p.where, "path": str(p.path), "description": p.description}
                          for p in presets], indent=2))
        return 0
    width = max((len(p.name) for p in presets), default=4)
    for p in presets:
        print(f"{p.name:<{width}}  {p.where:<8}  {p.description}")
    print(f"\nsaved presets live in {user_presets_dir()} (ZEROTUI_PRESETS_DIR overrides); "
          "use one with `zerotui train NAME` or `zerotui export NAME -o DIR`")
    return 0
