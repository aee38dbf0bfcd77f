"""One entry of a plan's data mix: where the rows are, how much of the mix they make, which split/config.

A plan's ``data`` is either one string (a file, a ``save_to_disk`` folder, 'sample' or ``hub:ID``) or a
list of these entries, mixed by weight (``core/data/sources.py``). ``sources(plan.data)`` gives the list
in both cases, so readers never branch on the shape.
"""
from __future__ import annotations

from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class DataSource(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    path: str = Field(min_length=1, description=(
        "A .json/.jsonl/.csv/.parquet/.txt file, a datasets save_to_disk folder, 'sample', or hub:<dataset id>."))
    weight: float = Field(1.0, gt=0, le=1e6, description="Share of the mix, relative to the other entries.")
    split: Optional[str] = Field(None, min_length=1, description=(
        "The split of a hub dataset or a save_to_disk DatasetDict (default: train)."))
    config: Optional[str] = Field(None, min_length=1, description="The configuration of a hub dataset.")

    def label(self) -> str:
        """How the entry is named in messages: the path, with its split/config when they were given."""
        extra = ", ".join(f"{k}={v}" for k, v in (("config", self.config), ("split", self.split)) if v)
        return f"{self.path} ({extra})" if extra else self.path


DataSpec = Union[str, list[DataSource]]


def parse_data(value: Any) -> Any:
    """The plan validator's first step: a list becomes entries, each problem one line naming the entry."""
    if not isinstance(value, list):
        return value
    out = []
    for i, entry in enumerate(value, 1):
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, (dict, DataSource)):  # pydantic makes a ValueError the field's message
            raise ValueError(f"data entry {i} is a {type(entry).__name__}; each entry is a path or "  # noqa: TRY004
                             "{path, weight, split, config}")
        try:
            out.append(entry if isinstance(entry, DataSource) else DataSource.model_validate(entry))
        except ValidationError as err:
            e = err.errors()[0]
            where = ".".join(str(x) for x in e["loc"]) or "entry"
            raise ValueError(f"data entry {i}: {where} {e['msg'].lower()} (got {e.get('input')!r}); an entry is "
                             "{path: FILE|FOLDER|hub:ID, weight: >0, split: NAME, config: NAME}") from None
    return out


def sources(data: Any) -> list[DataSource]:
    """The plan's ``data`` as a list of entries (one string is one entry of weight 1)."""
    if isinstance(data, str):
        return [DataSource(path=data)]
    return [d if isinstance(d, DataSource) else DataSource.model_validate(d) for d in data]


def describe_data(data: Any) -> str:
    """The data in one line of words (plan summaries, the wizard)."""
    if isinstance(data, str):
        return data
    return " + ".join(f"{s.label()} ×{s.weight:g}" for s in sources(data))
