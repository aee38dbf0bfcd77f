"""Byte sizes as people type them (``--gpu-mem 24GiB``) and as zerotui prints them.

Units, case-insensitive, optional space between number and unit, decimals allowed ("1.5T"):

* ``KiB MiB GiB TiB PiB`` are binary (2^10, 2^20, 2^30, ...).
* ``KB MB GB TB PB`` are decimal (10^3, 10^6, 10^9, ...), as disk makers state capacities
  (a "2 TB" NVMe drive holds 2e12 bytes, 1.82 TiB).
* a bare letter ``K M G T P`` is binary: that is what ``nvidia-smi`` (MiB columns), ``free -g``,
  ``docker --shm-size 16g`` and ``ulimit`` mean by it, so "24G" for a 24 GB card means 24 GiB.
* ``B`` or no unit at all is bytes.
"""
from __future__ import annotations

import math
import re
from typing import Union

from zerotui.core.errors import PlanError

_BINARY = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "p": 10**15}

_SIZE_RE = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[kmgtp](?:ib|i|b)?|b)?\s*$", re.IGNORECASE)

_HINT = "write a size like 24GiB, 24G (= GiB), 80GB (= 10^9 bytes), 512MiB or a plain number of bytes"


def parse_size(text: Union[str, int, float], what: str = "size") -> int:
    """Bytes in ``text``; raises PlanError naming ``what`` (e.g. ``--gpu-mem``) when it is not a size."""
    if isinstance(text, bool):  # bool is an int subclass; True bytes is never what anyone meant
        raise PlanError(f"{what}: {text!r} is not a size", _HINT)
    if isinstance(text, (int, float)):
        # (an int of 500 digits is not a float at all: math.isfinite would raise OverflowError)
        if (isinstance(text, float) and not math.isfinite(text)) or text < 0 or text > MAX_SIZE:
            shown = "a huge number" if isinstance(text, int) and abs(text) > MAX_SIZE else repr(text)
            raise PlanError(f"{what}: {shown} is not a size", _HINT)
        return int(text)
    if not isinstance(text, str):
        raise PlanError(f"{what}: {text!r} is not a size", _HINT)
    match = _SIZE_RE.match(text) if len(text) <= 64 else None  # no size needs more characters
    if not match:
        raise PlanError(f"{what}: {text[:40]!r} is not a size", _HINT)
    number = float(match.group("num"))
    unit = (match.group("unit") or "").lower()
    if unit in ("", "b"):
        if not number.is_integer():
            raise PlanError(f"{what}: {text!r} is a fraction of a byte", _HINT)
        return _bounded(number, text, what)
    prefix, rest = unit[0], unit[1:]
    factor = _DECIMAL[prefix] if rest == "b" else _BINARY[prefix]  # KB: decimal; K, Ki, KiB: binary
    return _bounded(round(number * factor), text, what)


#: The largest size anyone means (8 EiB; 2**63 - 1 bytes is what every C counter holds).
MAX_SIZE = 2**63 - 1


def _bounded(number: float, text: str, what: str) -> int:
    # A 400-digit number is a float of inf here: int() of it would raise OverflowError.
    if not math.isfinite(number) or number > MAX_SIZE:
        raise PlanError(f"{what}: {text[:40]!r} is larger than any disk or memory", _HINT)
    return int(number)


def format_bytes(n: Union[int, float, None], digits: int = 1) -> str:
    """``25769803776`` -> ``'24.0 GiB'``; binary units, because that is what RAM and VRAM come in."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.{digits}f} {unit}"
        value /= 1024
    return f"{value:.{digits}f} TiB"  # pragma: no cover - loop always returns
