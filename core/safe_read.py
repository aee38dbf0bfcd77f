"""The one bounded way in for every file zerotui reads: plans, presets, data, ds_configs, model configs and
the files of a run folder.

A file a user (or anyone who can write into a run folder) hands us may be a FIFO that blocks forever, a
device, a folder, a symlink out of the run folder, 2 GB of one line, 5,000 nested brackets, a YAML alias
bomb, ``1e400`` or a 5,001-digit integer. Each of those must end as one line naming the file, the field
and a fix — never a hang, a RecursionError, an OverflowError or a 16 MB ds_config.json written back out.

* ``open_regular`` opens with ``O_NONBLOCK`` (a FIFO with no writer opens at once instead of blocking),
  then ``fstat``s the open descriptor (no race with a rename) and refuses anything but a regular file;
  ``follow=False`` adds ``O_NOFOLLOW`` for run-folder files, which must be the folder's own.
* ``read_bytes`` / ``read_text`` add a size limit; the readers turn the ``InputFileError`` (an
  ``OSError``, so old ``except OSError`` paths still hold) into their own ZeroTuiError with ``describe``.
* ``load_json`` / ``load_yaml`` parse with bounded nesting and refuse non-finite numbers; ``check_value``
  walks the result with a budget of values (an alias bomb is a small graph but an enormous tree: the walk
  stops at the budget instead of expanding it), a depth limit and integer size limits.
* ``printable`` is the way out to a terminal or a table for text from such files and folders: a run
  folder's name can hold a newline (splitting a table's row) or an escape sequence (restyling or retitling
  the terminal); control characters are shown escaped, as Python writes them ("\\n", "\\x1b").
"""
from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Callable, Optional, Type

from zerotui.core.errors import ZeroTuiError

KIB, MIB = 1 << 10, 1 << 20
#: Limits per kind of file. A plan or preset is ~100 lines; a ds_config a few hundred; a model's
#: config.json rarely 100 KiB (a label map); status.json, hardware.json and the rest a few KiB.
PLAN_BYTES = 1 * MIB
DS_CONFIG_BYTES = 4 * MIB
MODEL_CONFIG_BYTES = 16 * MIB
RUN_FILE_BYTES = 4 * MIB
#: Nesting depth and number of values a plan / ds_config / status file may hold.
MAX_DEPTH = 32
MAX_VALUES = 100_000
#: The biggest integer any setting means (2**63 - 1: what C, torch and DeepSpeed's counters hold).
MAX_INT = 2**63 - 1
#: Characters of a bad value quoted back in an error line.
QUOTE_CHARS = 60


class InputFileError(OSError):
    """A path that is not a regular file we may read (FIFO, device, folder, symlink refused, too big)."""

    def __init__(self, path: Path | str, why: str, code: int = errno.EINVAL) -> None:
        super().__init__(code, why, str(path))
        self.why = why


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    return "is not a regular file"


def open_regular(path: Path | str, follow: bool = True) -> int:
    """A read-only descriptor of the regular file at ``path`` (the caller closes it).

    Never blocks: ``O_NONBLOCK`` makes a FIFO open at once, and the ``fstat`` of the open descriptor then
    refuses it. ``follow=False``: a symlink is refused (ELOOP), for files that must be a run folder's own.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP and not follow:
            raise InputFileError(path, "is a symlink; zerotui reads only the run folder's own files, never "
                                 "through a link", errno.ELOOP) from None
        if err.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing
            raise InputFileError(path, "is not a regular file", errno.ENXIO) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputFileError(path, _kind(mode), errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL)
    # Reads of a regular file never block anyway; clear the flag so the rest is ordinary I/O.
    os.set_blocking(fd, True)
    return fd


def open_file(path: Path | str, follow: bool = True) -> Any:
    """``open_regular`` as a binary file object (``with open_file(p) as fh``)."""
    return os.fdopen(open_regular(path, follow), "rb")


def read_bytes(path: Path | str, limit: int, follow: bool = True) -> bytes:
    """The whole regular file at ``path``; InputFileError when it is larger than ``limit`` bytes."""
    with open_file(path, follow) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise InputFileError(path, f"is {_size(size)}, more than the {_size(limit)} such a file may be",
                                 errno.EFBIG)
        data = fh.read(limit + 1)  # a file still growing is cut at the limit, not read to its end
    if len(data) > limit:
        raise InputFileError(path, f"is more than the {_size(limit)} such a file may be", errno.EFBIG)
    return data


def read_text(path: Path | str, limit: int, follow: bool = True) -> str:
    """``read_bytes`` decoded as UTF-8 (UnicodeDecodeError when it is not)."""
    return read_bytes(path, limit, follow).decode("utf-8")


def describe(err: BaseException) -> str:
    """What went wrong reading a file, in words that fit after its name ("x.yaml: is a FIFO ...")."""
    if isinstance(err, InputFileError):
        return err.why
    if isinstance(err, FileNotFoundError):
        return "no such file"
    if isinstance(err, IsADirectoryError):
        return "is a folder, not a file"
    if isinstance(err, PermissionError):
        return "permission denied"
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text (byte {err.start})"
    if isinstance(err, OSError):
        return f"cannot be read ({err.strerror or err})"
    return str(err)


def _size(n: int) -> str:
    return f"{n / MIB:.0f} MiB" if n >= MIB else f"{n / KIB:.0f} KiB" if n >= KIB else f"{n} bytes"


# -- values ---------------------------------------------------------------------------------------

class ValueProblem(ValueError):
    """A parsed value outside the bounds; ``where`` is the dotted path of the field ("" at the top)."""

    def __init__(self, where: str, what: str, fix: str) -> None:
        super().__init__(f"{where}: {what}" if where else what)
        self.where, self.what, self.fix = where, what, fix


def quote(value: Any) -> str:
    """``repr(value)`` cut to a few dozen characters, for error lines (a 4.6 MB line helps nobody)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**QUOTE_CHARS:
        return f"an integer of {len(str(abs(value))) if abs(value) < 10**4000 else 'thousands of'} digits"
    import reprlib

    short = reprlib.Repr()  # bounded by level and length: safe on deep or huge containers
    short.maxlevel, short.maxlist, short.maxdict, short.maxstring, short.maxother = 2, 4, 4, QUOTE_CHARS, QUOTE_CHARS
    text = short.repr(value)
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 3] + "..."


def check_value(value: Any, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES, finite: bool = True) -> Any:
    """``value`` itself when it is plain bounded data; ValueProblem naming the first field that is not.

    Plain data: dicts with string keys, lists, strings, booleans, None, integers within ±MAX_INT and
    finite floats; at most ``max_depth`` levels and ``max_values`` values counted as a tree (so shared
    YAML aliases count every time they are used). ``finite=False`` lets NaN and inf through (a run's
    status may report a NaN loss: that is news, not damage).
    """
    budget = [max_values]
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueProblem("", f"holds more than {max_values:,} values (YAML aliases such as *a that "
                               "repeat others count each time)", "write the values out; a plan needs a few dozen")
        if depth > max_depth:
            raise ValueProblem(where, f"is nested more than {max_depth} levels deep",
                               "flatten it: settings are at most a few levels deep")
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, _HugeInt):
            raise ValueProblem(where, f"an integer of {item.digits} digits is larger than any setting can hold",
                               f"use a number below {MAX_INT:,}")
        if isinstance(item, int):
            if abs(item) > MAX_INT:
                raise ValueProblem(where, f"{quote(item)} is larger than any setting can hold",
                                   f"use a number below {MAX_INT:,}")
            continue
        if isinstance(item, float):
            if finite and not math.isfinite(item):
                raise ValueProblem(where, f"{quote(item)} is not a finite number",
                                   "give an ordinary number such as 1.0, not inf, nan or 1e400")
            continue
        if isinstance(item, dict):
            for k, v in item.items():
                if not isinstance(k, str):
                    raise ValueProblem(where, f"has the key {quote(k)}, which is not text",
                                       "keys are names such as 'stage'")
                stack.append((v, f"{where}.{k}" if where else k, depth + 1))
            continue
        if isinstance(item, (list, tuple)):
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))
            continue
        raise ValueProblem(where, f"holds a {type(item).__name__} ({quote(item)})",
                           "use plain values: text, numbers, true/false, lists and mappings")
    return value


# -- JSON and YAML --------------------------------------------------------------------------------

def _too_deep(max_depth: int) -> ValueProblem:
    return ValueProblem("", f"is nested more than {max_depth} levels deep", "settings are at most a few levels deep")


class _HugeInt:
    """Stands in for an integer literal too long to build (Python refuses past 4,300 digits, and
    nothing means more than 19): ``check_value`` then names the field it sits in."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _json_int(text: str) -> Any:
    digits = len(text.lstrip("-"))
    return _HugeInt(digits) if digits > 19 else int(text)


def max_bracket_depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings: checked before parsing so a parser never recurses
    5,000 levels (it would raise RecursionError, or worse, exhaust the C stack)."""
    depth = deepest = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def load_json(text: str, max_depth: int = MAX_DEPTH, pairs_hook: Optional[Callable] = None,
              max_values: int = MAX_VALUES, finite: bool = True) -> Any:
    """Strict JSON with bounded nesting, integers and floats; ValueError (json.JSONDecodeError for
    syntax, ValueProblem for bounds) on anything else."""
    if max_bracket_depth(text) > max_depth:
        raise _too_deep(max_depth)
    # NaN / Infinity / 1e400 parse to floats that check_value then refuses, naming the field.
    value = json.loads(text, parse_int=_json_int, object_pairs_hook=pairs_hook)
    return check_value(value, max_depth, max_values, finite)


def load_yaml(text: str, max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES) -> Any:
    """``yaml.safe_load`` with bounded nesting, numbers and alias expansion (see ``check_value``)."""
    import yaml

    loader = _bounded_loader(yaml, max_depth)(text)
    try:
        value = loader.get_single_data()
    finally:
        loader.dispose()
    return check_value(value, max_depth, max_values)


_LOADERS: dict[int, Type] = {}


def _bounded_loader(yaml: Any, max_depth: int) -> Type:
    if max_depth in _LOADERS:
        return _LOADERS[max_depth]
    # The pure-Python SafeLoader: its composer is the part that recurses, and the one that can be hooked.
    class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc, valid-type]
        """SafeLoader whose composer counts depth (it recurses once per level) and whose integers are
        checked for length before they are built."""

        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            try:
                if self._depth > max_depth:
                    raise _too_deep(max_depth)
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # yaml.safe_load keeps the last of two equal keys without a word: `model:` twice in a plan
            # trained the second model silently
            seen: set[str] = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    if key_node.value in seen:
                        raise ValueProblem(str(key_node.value)[:60], f"is given twice (again on line "
                                           f"{key_node.start_mark.line + 1})", "keep one of them")
                    seen.add(key_node.value)
            return super().construct_mapping(node, deep)

        def construct_yaml_int(self, node: Any) -> int:
            if len(str(node.value)) > 24:
                raise ValueProblem("", f"an integer of {len(str(node.value))} characters is larger than any "
                                   "setting can hold", f"use a number below {MAX_INT:,}")
            return super().construct_yaml_int(node)

    BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)
    _LOADERS[max_depth] = BoundedLoader
    return BoundedLoader


def as_error(err: ValueProblem, source: str, error: Type[ZeroTuiError], field_prefix: str = "") -> ZeroTuiError:
    """A ValueProblem as the reader's own error: "SOURCE: field 'x.y': WHAT (FIX)"."""
    where = f"{field_prefix}.{err.where}" if field_prefix and err.where else (err.where or field_prefix)
    at = f"field '{where}': " if where else ""
    return error(f"{source}: {at}{err.what}", err.fix, field=where.split(".")[0].split("[")[0])


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every C0/C1 control character (newline, tab, ESC, DEL...) written as an escape."""
    return _CONTROL_CHARS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
