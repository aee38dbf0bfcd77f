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
from typing import Optional

import yaml

from zerotui.core.atomic import atomic_write_text, create_exclusive_text
from zerotui.core.errors import PlanError, PresetError
from zerotui.core.plan.describe import yaml_error
from zerotui.core.plan.schema import PLAN_VALUES, Plan, load_plan, plan_from_dict
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
    #: The file's description; for one that cannot be used, what is wrong instead ("(unreadable: ...)"),
    #: so every list of presets (the wizard's picker too) says so without knowing about ``problem``.
    description: str = ""
    problem: str = ""   # why the file cannot be used as a plan, one line; "" when it loads
    #: A file its name does not load: the preset that name loads instead (``list_presets(include_hidden)``)
    hidden_by: Optional["PresetInfo"] = None

    @property
    def builtin(self) -> bool:
        return self.where == "built-in"

    def hidden_words(self) -> str:
        """What hides this file and how to use it anyway, or "" when its name loads it."""
        by = self.hidden_by
        if by is None:
            return ""
        winner = f"the built-in preset {by.name!r}" if by.builtin else str(by.path)
        return (f"{self.path.name} is hidden by {winner}, which the name {self.name!r} loads: rename the file, "
                "or give its path")


def _preset_files(folder: Path) -> list[tuple[str, Path]]:
    """(name, path) of every preset file in ``folder`` in name order, NAME.yaml before NAME.yml (the one
    save_preset writes). Anything with a preset's suffix counts, a FIFO or a link to a device included:
    it is read bounded and listed as unreadable, never left out without a word."""
    try:
        entries = sorted(folder.iterdir(), key=lambda p: (p.stem, PRESET_SUFFIXES.index(p.suffix)
                                                          if p.suffix in PRESET_SUFFIXES else 0))
    except OSError:  # missing or unreadable folder: simply no presets there
        return []
    return [(p.stem, p) for p in entries if p.suffix in PRESET_SUFFIXES and not p.name.startswith(".")]


#: Longest reason shown in a listing line: a YAML error quotes the file, and a listing stays one line each.
_REASON_CHARS = 160


def _reason(err: PlanError, source: str) -> str:
    text = " ".join(err.message.removeprefix(f"{source}: ").split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."


def _summary(path: Path) -> tuple[str, str, str]:
    """(description, problem, what kind of problem) of one preset file, read and validated as a plan.

    Bounded like any plan (core/safe_read.py): one hostile file in the presets folder (a FIFO, /dev/zero,
    an alias bomb, 5,000 nested brackets) must not hang or break `zerotui presets` and every lookup.
    """
    try:
        text = read_text(path, PLAN_BYTES)
    except (OSError, UnicodeDecodeError) as err:
        if isinstance(err, FileNotFoundError) and path.is_symlink():
            return "", f"is a link to {os.readlink(path)}, which does not exist", "unreadable"
        return "", describe(err), "unreadable"
    source = str(path)
    # plan_from_yaml's steps, parsed once: the description of a plan that fails validation still helps
    # recognise it, and a 5,000-deep file costs its parse once, not twice.
    try:
        data = load_yaml(text, max_values=PLAN_VALUES)
    except ValueProblem as err:
        return "", _reason(as_error(err, source, PlanError), source), "unreadable"
    except yaml.YAMLError as err:
        return "", _reason(yaml_error(err, source), source), "unreadable"
    desc = data.get("description") if isinstance(data, dict) else None
    desc = desc if isinstance(desc, str) else ""
    if data is None:
        return "", "the file is empty", "invalid plan"
    try:
        return plan_from_dict(data, source).description, "", ""
    except PlanError as err:
        return desc, _reason(err, source), "invalid plan"


def list_presets(include_hidden: bool = False, read: bool = True) -> list[PresetInfo]:
    """Built-in presets, then the user's, each sorted by name; a file that cannot be used is listed with
    ``problem`` saying why.

    A name loads one file: a built-in name always means the built-in (save_preset refuses those names),
    and NAME.yaml comes before NAME.yml. Files a name does not reach are left out, unless
    ``include_hidden``: then each is listed after the one it loses to, with ``hidden_by`` naming that.
    ``read=False`` leaves the files unread (no description, no problem): what a lookup by name needs,
    without parsing and validating every preset there is.
    """
    out: list[PresetInfo] = []
    loads: dict[str, PresetInfo] = {}
    for where, folder in (("built-in", builtin_presets_dir()), ("user", user_presets_dir())):
        for name, path in _preset_files(folder):
            winner = loads.get(name)
            if winner is not None and not include_hidden:
                continue
            desc, problem, kind = _summary(path) if read else ("", "", "")
            if problem:
                desc = f"({kind}: {problem})"
            out.append(PresetInfo(name, where, path, desc, problem, winner))
            loads.setdefault(name, out[-1])
    return out


def hidden_presets(name: str) -> list[PresetInfo]:
    """The files called ``name`` that ``load_preset(name)`` does not load (a user preset named like a
    built-in one), for a caller that says so when it loads that name."""
    return [i for i in list_presets(include_hidden=True, read=False) if i.name == name and i.hidden_by is not None]


def hidden_note(name: str) -> str:
    """One line saying which preset ``name`` loads and which file of that name it leaves unused, or ""."""
    hidden = hidden_presets(name)
    loaded = hidden[0].hidden_by if hidden else None
    if loaded is None:
        return ""
    files = ", ".join(str(i.path) for i in hidden)
    return (f"preset {name!r} is the {loaded.where} one ({loaded.path}); your file of the same name ({files}) "
            "is not used: rename it, or give its path to use it")


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


def _read_preset(info: PresetInfo) -> Plan:
    try:  # a FIFO or a device in the presets folder: said to be one, as the preset it was asked for
        os.close(open_regular(info.path))
    except OSError as err:
        raise PresetError(f"{info.where} preset {info.name!r} ({info.path}): {describe(err)}",
                          "a preset is a plan .yaml file; `zerotui presets` lists each one and what is wrong "
                          "with it") from None
    return load_plan(info.path, label=f"{info.where} preset '{info.name}' ({info.path})")


def find_preset(name: str) -> PresetInfo:
    """The preset called ``name`` (built-in first), or PresetError listing the known ones."""
    presets = list_presets(read=False)
    for info in presets:
        if info.name == name:
            return info
    known = [i.name for i in presets]
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}? " if close else "") + \
        "`zerotui presets` lists them; a plan file needs its .yaml path"
    raise PresetError(f"unknown preset {name!r} (known: {', '.join(known) or 'none'})", hint)


def load_preset(name_or_path: str | Path) -> Plan:
    """A Plan from a built-in preset name, a saved preset name, or a .yaml path. A name that both a
    built-in and a saved preset have loads the built-in (``hidden_note`` says so, for callers that can)."""
    text = str(name_or_path)
    if not text.strip():
        raise PresetError("empty preset name", "give a preset name (`zerotui presets` lists them) or a .yaml path")
    known = {i.name: i for i in list_presets(read=False)}
    # A bare name is a preset first: `zerotui export tiny-cpu-demo -o tiny-cpu-demo` makes a folder of that
    # name, and `zerotui train tiny-cpu-demo` from the same place must still mean the preset.
    if isinstance(name_or_path, Path) or _looks_like_path(text) or (text not in known and Path(text).exists()):
        path = Path(text).expanduser()
        return load_plan(path, label=str(path))
    return _read_preset(known.get(text) or find_preset(text))


def save_preset(plan: Plan, name: str, overwrite: bool = False) -> Path:
    """Save ``plan`` as the user preset ``name`` (its ``name`` field becomes the preset's name).

    Refuses to replace an existing preset unless ``overwrite``, and refuses built-in names. The file is
    written whole or not at all.
    """
    if not _NAME_RE.match(name or "") or len(name) > 80:
        raise PresetError(f"invalid preset name {name!r}",
                          "use letters, digits, '.', '_' and '-', starting with a letter or digit")
    if name in dict(_preset_files(builtin_presets_dir())):
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

