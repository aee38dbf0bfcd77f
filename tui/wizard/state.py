"""The Plan being edited in the wizard: raw answers, per-field errors, and the last valid Plan.

Kept free of Textual so it can be tested (and reasoned about) alone: screens turn widget values into
``set(field, value)`` calls and read back ``errors`` to mark fields; the budget bar and the review read
``plan``. A rejected answer never replaces the last valid Plan, so the budget keeps showing something
sensible while the user is half-way through typing a number.
"""
from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError

from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan, plan_from_dict
from zerotui.core.sizes import parse_size

#: The wizard's steps, in accelerate's questionnaire order (model → data/method → precision → ZeRO).
STEPS: tuple[tuple[str, str], ...] = (
    ("model", "Model"),
    ("data", "Data & method"),
    ("precision", "Precision"),
    ("zero", "ZeRO & offload"),
    ("review", "Review"),
)
#: Byte-size fields, typed as people write sizes (24GiB) and read by the parser the CLI's options use.
SIZE_FIELDS = frozenset({"gpu_mem_cap"})


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def parse_field(name: str, value: Any) -> Any:
    """Turn what a widget holds (usually text) into the Python value the Plan field takes.

    Raises PlanError naming the field when the text is not of the right kind ("abc" for a number).
    Range checks are left to the Plan itself, so there is one source of truth for them.
    """
    info = Plan.model_fields[name]
    tp, optional = _unwrap_optional(info.annotation)
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text == "" and optional:
        return None
    label = info.alias or name
    if name in SIZE_FIELDS:
        return parse_size(text, label)
    if tp is bool:
        return text.lower() in ("1", "true", "yes", "on")
    if tp is int:
        try:
            return int(text.replace("_", ""))
        except ValueError:
            raise PlanError(f"{label}: {text!r} is not a whole number", "type digits, e.g. 4") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise PlanError(f"{label}: {text!r} is not a number", "type a number, e.g. 2e-5 or 0.05") from None
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp)
        parts = [p.strip() for p in text.split(",") if p.strip()]
        try:
            return [item(p) for p in parts]
        except ValueError:
            raise PlanError(f"{label}: {text!r} is not a comma-separated list of {item.__name__}",
                            "separate the items with commas, e.g. q_proj,v_proj") from None
    if tp is Path:
        if text == "":
            raise PlanError(f"{label}: a path is needed", "type or pick a folder")
        return Path(text).expanduser()
    return text


def _field_of(error: dict[str, Any]) -> str:
    """Which field a pydantic error belongs to; cross-field messages start with the field they name."""
    loc = [p for p in error.get("loc", ()) if isinstance(p, str)]
    if loc:
        name = loc[0]
        for attr, f in Plan.model_fields.items():
            if name in (attr, f.alias):
                return attr
        return name
    msg = error.get("msg", "")
    match = re.match(r"(?:Value error, )?(\w+)", msg)
    if match and match.group(1) in Plan.model_fields:
        return match.group(1)
    # "QLoRA keeps its quantised base on the GPU: offload_params must be none": the first field named,
    # so a row is marked (as "plan", no row was, and only the budget bar said it, cut at 80 columns).
    names = re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", msg) + \
        [flag.replace("-", "_") for flag in re.findall(r"--([a-z][a-z0-9-]*)", msg)]
    return next((name for name in names if name in Plan.model_fields), "plan")


def _message_of(error: dict[str, Any]) -> str:
    msg = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    if error.get("type") == "value_error":
        return msg  # the Plan's own cross-field messages already say what to do
    given = error.get("input")
    msg = msg.replace("Input should be", "must be")
    return msg if isinstance(given, (dict, list)) or given is None else f"{msg} (got {given!r})"


#: The preset a new run starts from: the built-in tiny model on the sample data, tuned to finish in about
#: a minute on 2 CPU cores (presets/tiny-cpu-demo.yaml). Plan() defaults alone would run 2,280 steps
#: of 512 tokens there: fine for a real model, a quarter of an hour for a first look.
STARTER_PRESET = "tiny-cpu-demo"


def starter_plan() -> Plan:
    """What the wizard shows for a new run: the tiny demo renamed 'run', or Plan() if it cannot load."""
    from zerotui.core.errors import ZeroTuiError
    from zerotui.core.plan.presets import load_preset

    try:
        # gpus is left open so a new run uses every detected GPU (the demo pins 1 for its CPU timing).
        return load_preset(STARTER_PRESET).with_changes(name="run", description="", gpus=None)
    except ZeroTuiError:
        return Plan()


class WizardState:
    """The answers so far. ``plan`` is always a valid Plan: the last one all answers agreed on."""

    def __init__(self, plan: Optional[Plan] = None) -> None:
        self.plan: Plan = plan or starter_plan()
        self._draft: dict[str, Any] = dict(self.plan)
        self._parse_errors: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.revision = 0  # bumps on every accepted change; workers use it to drop stale results

    # -- reading ----------------------------------------------------------------------------------
    @property
    def valid(self) -> bool:
        return not self.errors

    def value(self, name: str) -> Any:
        """The current answer for a field (what the user typed, even when it is not valid yet)."""
        return self._draft.get(name, getattr(self.plan, name))

    def first_error(self) -> Optional[tuple[str, str]]:
        return next(iter(self.errors.items()), None)

    # -- changing ---------------------------------------------------------------------------------
    def set(self, name: str, value: Any) -> bool:
        """Record one answer. Returns True when all answers together make a valid Plan."""
        return self.set_many({name: value})

    def set_many(self, values: dict[str, Any]) -> bool:
        for name, raw in values.items():
            if name not in Plan.model_fields:
                raise KeyError(name)
            try:
                self._draft[name] = parse_field(name, raw)
                self._parse_errors.pop(name, None)
            except PlanError as err:
                self._draft[name] = raw
                label = Plan.model_fields[name].alias or name
                self._parse_errors[name] = err.one_line().removeprefix(f"{label}: ")
        return self._revalidate()

    def replace_plan(self, plan: Plan) -> None:
        """Take a whole Plan (a preset, the Fit action): every answer becomes that Plan's."""
        self.plan = plan
        self._draft = dict(plan)
        self._parse_errors = {}
        self.errors = {}
        self.revision += 1

    def _revalidate(self) -> bool:
        # Fields whose text could not even be parsed take the last valid value, so the other fields'
        # range and cross-field problems are still found and shown at the same time.
        data = {}
        for k, v in self._draft.items():
            data[Plan.model_fields[k].alias or k] = getattr(self.plan, k) if k in self._parse_errors else v
        errors: dict[str, str] = {}
        plan: Optional[Plan] = None
        try:
            plan = Plan.model_validate(data)
        except ValidationError as err:
            for e in err.errors():
                errors.setdefault(_field_of(e), _message_of(e))
        errors.update(self._parse_errors)
        self.errors = errors
        self.revision += 1
        if plan is not None and not errors:
            self.plan = plan
            return True
        return False

    def validated_plan(self) -> Plan:
        """The Plan, or a PlanError naming the first wrong answer (used by Launch and Save)."""
        if self.errors:
            name, msg = next(iter(self.errors.items()))
            raise PlanError(msg if msg.startswith(name) else f"{name}: {msg}",
                            "fix the field marked in red, or press Fit")
        return plan_from_dict(self.plan.to_dict())
