"""Presets: named plans. Built-in ones ship as ``presets/*.yaml`` (package ``zerotui.presets``); users save
their own into ``user_presets_dir()``. A preset is an ordinary plan file, validated on load with the
file and the field named in any error; saving never silently replaces an existing preset.
"""
from __future__ import annotations

import difflib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
import yaml

from zerotui.core.atomic import atomic_write_text, create_exclusive_text
from zerotui.core.errors import PlanError, PresetError
from zerotui.core.plan.schema import PLAN_VALUES, Plan, load_plan
from zerotui.core.safe_read import (PLAN_BYTES, InputFileError, ValueProblem, as_error, describe, load_yaml,
                                    open_regular, read_text)
from zerotui.core.paths import builtin_presets_dir, user_presets_dir

PRESET_SUFFIXES = (".yaml", ".yml")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class PresetInfo:
    name: str
    where: str          # "built-in" or "user"
    path: Path
    description: str = ""

    @property
    def builtin(self) -> bool:
        return self.where == "built-in"


def _yaml_files(folder: Path) -> dict[str, Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError:  # missing or unreadable folder: simply no presets there
        return {}
    return {p.stem: p for p in entries if p.suffix in PRESET_SUFFIXES and p.is_file()
            and not p.name.startswith(".")}


def _description(path: Path) -> str:
    # Bounded like any plan (core/safe_read.py): one hostile file in the presets folder must not break
    # `zerotui presets` and every preset lookup with a RecursionError, an alias bomb or a FIFO.
    try:
        data = load_yaml(read_text(path, PLAN_BYTES))
    except (OSError, ValueError, yaml.YAMLError):  # UnicodeDecodeError and ValueProblem are ValueErrors
        return "(unreadable: `zerotui presets` cannot parse this file)"
    return str(data.get("description") or "") if isinstance(data, dict) else ""


def list_presets() -> list[PresetInfo]:
    """Built-in presets, then the user's, each sorted by name."""
    out = [PresetInfo(n, "built-in", p, _description(p)) for n, p in _yaml_files(builtin_presets_dir()).items()]
    builtin = {i.name for i in out}
    out += [PresetInfo(n, "user", p, _description(p)) for n, p in _yaml_files(user_presets_dir()).items()
            if n not in builtin]  # a built-in name always means the built-in (save_preset refuses it)
    return out


def _looks_like_path(text: str) -> bool:
    return text.endswith(PRESET_SUFFIXES) or os.sep in text or "/" in text


def check_bounded(path: Path | str) -> None:
    """PlanError when the YAML file at ``path`` is of the wrong kind (a FIFO, a device), too large, too
    deep, an alias bomb or holds 1e400 — for readers of other YAML dialects (``--plan`` also takes a
    LLaMA-Factory / axolotl file) that must not meet such a file unbounded. Anything else (a missing file,
    bad syntax) is left for the reader to explain in its own words."""
    p = Path(path).expanduser()
    try:
        load_yaml(read_text(p, PLAN_BYTES), max_values=PLAN_VALUES)
    except ValueProblem as err:
        raise as_error(err, str(p), PlanError) from None
    except InputFileError as err:
        raise PlanError(f"{p}: {err.why}", "give the path of a plan .yaml or a preset name") from None
    except (OSError, ValueError, yaml.YAMLError):
        return


def _read_plan_file(path: Path, label: str) -> Plan:
    return load_plan(path, label=label)


def find_preset(name: str) -> PresetInfo:
    """The preset called ``name`` (built-in first), or PresetError listing the known ones."""
    for info in list_presets():
        if info.name == name:
            return info
    for suffix in PRESET_SUFFIXES:  # there, but not a file list_presets reads (a FIFO, a device, a folder)
        there = user_presets_dir() / f"{name}{suffix}"
        if os.path.lexists(there):
            try:
                os.close(open_regular(there))
            except OSError as err:
                raise PresetError(f"user preset {name!r} ({there}): {describe(err)}",
                                  "a preset is a plan .yaml file; `zerotui presets` lists the ones that read")
    known = [i.name for i in list_presets()]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}? " if close else "") + \
        "`zerotui presets` lists them; a plan file needs its .yaml path"
    raise PresetError(f"unknown preset {name!r} (known: {', '.join(known) or 'none'})", hint)


def load_preset(name_or_path: str | Path) -> Plan:
    """A Plan from a built-in preset name, a saved preset name, or a .yaml path."""
    text = str(name_or_path)
    if not text.strip():
        raise PresetError("empty preset name", "give a preset name (`zerotui presets` lists them) or a .yaml path")
    known = {i.name: i for i in list_presets()}
    # A bare name is a preset first: `zerotui export tiny-cpu-demo -o tiny-cpu-demo` makes a folder of that
    # name, and `zerotui train tiny-cpu-demo` from the same place must still mean the preset.
    if isinstance(name_or_path, Path) or _looks_like_path(text) or (text not in known and Path(text).exists()):
        path = Path(text).expanduser()
        return _read_plan_file(path, str(path))
    info = known.get(text) or find_preset(text)
    return _read_plan_file(info.path, f"{info.where} preset '{info.name}' ({info.path})")


def save_preset(plan: Plan, name: str, overwrite: bool = False) -> Path:
    """Save ``plan`` as the user preset ``name`` (its ``name`` field becomes the preset's name).

    Refuses to replace an existing preset unless ``overwrite``, and refuses built-in names. The file is
    written whole or not at all.
    """
    if not _NAME_RE.match(name or "") or len(name) > 80:
        raise PresetError(f"invalid preset name {name!r}",
                          "use letters, digits, '.', '_' and '-', starting with a letter or digit")
    if name in _yaml_files(builtin_presets_dir()):
        raise PresetError(f"{name!r} is a built-in preset name", "choose another name for your preset")
    folder = user_presets_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PresetError(f"cannot create the presets folder {folder}: {err.strerror or err}",
                          "set ZEROTUI_PRESETS_DIR to a writable folder") from None
    existing = [folder / f"{name}{s}" for s in PRESET_SUFFIXES if (folder / f"{name}{s}").exists()]
    if existing and not overwrite:
        raise PresetError(f"preset {name!r} already exists at {existing[0]}",
                          "choose another name, or overwrite it explicitly (--force)")
    path = existing[0] if existing else folder / f"{name}.yaml"
    named = plan if plan.name == name else plan.with_changes(name=name)
    text = f"# zerotui preset '{name}', saved {time.strftime('%Y-%m-%d %H:%M')}\n" + named.to_yaml()
    try:
        if overwrite:
            atomic_write_text(path, text)
        else:
            create_exclusive_text(path, text)  # fails if another process created it meanwhile
    except FileExistsError:
        raise PresetError(f"preset {name!r} already exists at {path}",
                          "choose another name, or overwrite it explicitly (--force)") from None
    except OSError as err:
        raise PresetError(f"cannot write {path}: {err.strerror or err}",
                          "check free space and permissions, or set ZEROTUI_PRESETS_DIR") from None
    return path

