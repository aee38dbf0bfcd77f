"""The core never imports the UI: importing every zerotui.core module, in a fresh interpreter, leaves
textual and rich out of sys.modules — also through a third-party package, which the import-linter contract
(tests/unit/test_layers.py) does not see. Modules are discovered from the folder, so new ones are covered
without editing this file."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import zerotui.core

CORE = Path(zerotui.core.__file__).parent


def core_modules() -> list[str]:
    names = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        names.append(".".join(["zerotui.core", *parts]))
    return names


CHECK = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "rich"))
print(" ".join(bad))
sys.exit(1 if bad else 0)
"""


def test_discovery_finds_the_core_modules():
    mods = core_modules()
    assert {"zerotui.core", "zerotui.core.plan.schema", "zerotui.core.deepspeed.config", "zerotui.core.plan.presets"} <= set(mods)


def test_no_core_module_imports_textual_or_rich():
    r = subprocess.run([sys.executable, "-c", CHECK, *core_modules()], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"the core pulled in: {r.stdout.strip()}\n{r.stderr[-2000:]}"


def test_the_check_itself_can_fail():
    """Guard against a check that always passes: importing rich directly must be caught."""
    r = subprocess.run([sys.executable, "-c", CHECK, "rich.text"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "rich" in r.stdout
