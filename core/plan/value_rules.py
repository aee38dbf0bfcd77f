"""Rules every Plan field's value keeps, whatever the field (schema.py applies them to all of them)."""
from __future__ import annotations

from typing import Any, get_args

from zerotui.core.safe_read import MAX_INT, quote


def no_yes_no_for_a_number(annotation: Any, value: Any, name: str) -> Any:
    """pydantic's lax mode reads true as 1: `micro_batch: true` planned a micro-batch of 1 in silence."""
    if isinstance(value, bool):
        kinds = set(get_args(annotation)) or {annotation}
        numeric = kinds & {int, float} or any(type(k) is int for k in kinds)
        if numeric and bool not in kinds:
            raise ValueError(f"field '{name}': {str(value).lower()} is a yes/no, not a number; give a number")
    return value


def bounded_int(value: Any, name: str) -> Any:
    """Fields with no upper bound (seed, max_steps, ...) still end in C counters and torch."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        raise ValueError(f"field '{name}': {quote(value)} is larger than any setting can hold; "
                         f"use a number below {MAX_INT:,}")
    return value
