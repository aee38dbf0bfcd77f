"""Make ``zerotui.core`` importable where the project is not installed (the GPU machine).

The repository keeps the packages in ``core/`` and ``cli/`` and maps them to ``zerotui.core`` /
``zerotui.cli`` at install time (pyproject.toml). Where no install exists, a folder in /tmp holding a
``zerotui`` package whose ``core``/``cli`` are links to the repository gives the same import names.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def ensure_zerotui_importable(force_shim: bool = False) -> str:
    """Returns how zerotui was found: 'installed' or the shim folder."""
    if not force_shim:
        try:
            import zerotui.core.plan.schema  # noqa: F401
            return "installed"
        except ImportError:
            pass
    shim = Path(tempfile.gettempdir()) / "zerotui_shim"
    pkg = shim / "zerotui"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text('"""import shim for benchmarks (see benchmarks/estimator/paths.py)"""\n')
    for name in ("core", "cli"):
        link = pkg / name
        if not link.exists():
            link.symlink_to(REPO / name, target_is_directory=True)
    sys.path.insert(0, str(shim))
    for mod in [m for m in sys.modules if m == "zerotui" or m.startswith("zerotui.")]:
        del sys.modules[mod]
    import importlib

    importlib.import_module("zerotui.core.plan.schema")  # fails loudly here rather than mid-sweep
    return str(shim)
