"""The house keeps its shape: the import-linter layer contracts (pyproject.toml), no import cycle, small
files, few base modules, and one writer for ds_config.json and for run_finished."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from places import REPO

PACKAGES = ("core", "tui", "cli")
WRITERS = {"atomic_write_json", "atomic_write_text", "atomic_write_bytes", "create_exclusive_text",
           "write_text", "write_bytes", "dump", "open"}


def test_the_layer_contracts_hold():
    r = subprocess.run([str(Path(sys.executable).with_name("lint-imports"))], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "0 broken" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]


def test_no_file_passes_400_lines():
    long = {str(p.relative_to(REPO)): n for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_the_core_has_few_modules_of_its_own():
    """Everything else lives in a sub-package named for what it does."""
    base = sorted(p.name for p in (REPO / "core").glob("*.py") if p.name != "__init__.py")
    assert len(base) <= 6, base


def _writes_mentioning(root: Path, word: str) -> set[str]:
    """Files with a write call (a function from WRITERS) whose arguments mention ``word``."""
    found = set()
    for f in root.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            target = ast.unparse(node.func.value) if isinstance(node.func, ast.Attribute) else ""
            args = " ".join(ast.unparse(a) for a in node.args) + " " + target
            if name in WRITERS and word in args:
                found.add(f.relative_to(root).as_posix())
    return found


def test_ds_config_json_is_written_by_the_launch_alone():
    """Only ``run.prepare`` builds and writes it (for ``zerotui train`` and ``export`` alike); the worker
    and everything else read it. The scan finds a write that names the file or the paths attribute."""
    core = REPO / "core"
    assert _writes_mentioning(core, "ds_config") == set()
    assert "write_launch_files" in (core / "run" / "prepare.py").read_text()


def test_the_write_scan_finds_what_it_looks_for(tmp_path):
    (tmp_path / "bad.py").write_text("atomic_write_json(paths.ds_config, cfg)\npaths.ds_config.write_text('x')\n")
    assert _writes_mentioning(tmp_path, "ds_config") == {"bad.py"}
