"""The search space of a sweep, as written on the command line:

    lr=1e-5..3e-4:log,grad_accum=4,8,16,lora_r=8..64

``NAME=LOW..HIGH`` is a range (an integer range when the Plan field is an integer; ``:log`` samples it
on a log scale), ``NAME=A,B,C`` a set of choices; a part without ``=`` continues the previous choices.
Every name is a Plan field, and every value must be one the field accepts (checked on the base plan now,
not in trial 7).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan

HINT = "e.g. --space lr=1e-5..3e-4:log,grad_accum=4,8,16 (names are plan fields)"
#: Fields a sweep must not vary: they name, place or size the run rather than what it learns.
NOT_SEARCHABLE = {"name", "description", "model", "data", "runs_dir", "max_steps", "epochs", "gpus", "gpu_ids",
                  "nodes", "hostfile", "master_port", "notify_url", "save_interval", "save_minutes"}


@dataclass(frozen=True)
class Param:
    name: str
    low: Optional[float] = None
    high: Optional[float] = None
    log: bool = False
    integer: bool = False
    choices: tuple[Any, ...] = ()

    def describe(self) -> str:
        if self.choices:
            return f"{self.name} in {{{', '.join(map(str, self.choices))}}}"
        return f"{self.name} in [{self.low:g}, {self.high:g}]" + (" (log)" if self.log else "")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "low": self.low, "high": self.high, "log": self.log, "integer": self.integer,
                "choices": list(self.choices)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Param":
        return cls(d["name"], d.get("low"), d.get("high"), bool(d.get("log")), bool(d.get("integer")),
                   tuple(d.get("choices") or ()))


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise PlanError(f"--space {what}: {text!r} is not a number", HINT) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise PlanError(f"--space {what}: {text!r} is not a finite number", HINT)
    return value


def _forms(name: str, ann: Any) -> str:
    """The values ``name`` takes on the command line, for a message about a missing one."""
    from typing import Literal, get_args, get_origin

    if ann in (int, float):
        return f"a range {name}=LOW..HIGH or {name}=LOW..HIGH:log (log scale), or choices {name}=A,B,C"
    known = ("true, false" if ann is bool else
             ", ".join(map(str, get_args(ann))) if get_origin(ann) is Literal else "")
    return f"choices {name}=A,B,C" + (f" (of: {known})" if known else "")


def _missing(name: str, ann: Any, what: str) -> PlanError:
    return PlanError(f"--space {name}: {what}; give {_forms(name, ann)}", HINT)


def _field_type(name: str) -> Any:
    field = Plan.model_fields.get(name)
    if field is None or name in NOT_SEARCHABLE:
        raise PlanError(f"--space: {name!r} is not a plan field a sweep can vary", HINT)
    return field.annotation


def _choice(name: str, text: str, ann: Any) -> Any:
    if ann is int:
        value = _number(text, name)
        if value != int(value):
            raise PlanError(f"--space {name}: {text!r} is not a whole number", HINT)
        return int(value)
    if ann is float:
        return _number(text, name)
    if ann is bool:
        if text.lower() not in ("true", "false"):
            raise PlanError(f"--space {name}: {text!r} is not true or false", HINT)
        return text.lower() == "true"
    return text


def parse_space(text: str, base: Plan) -> list[Param]:
    """The parameters of ``text``; PlanError naming the part that is wrong."""
    if not text.strip():
        raise PlanError("--space is empty", HINT)
    specs: list[tuple[str, list[str]]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise PlanError(f"--space {text!r}: an empty part (two commas in a row?)", HINT)
        if "=" in part:
            name, _, value = part.partition("=")
            specs.append((name.strip().replace("-", "_"), [value.strip()]))
        elif specs:
            specs[-1][1].append(part)
        else:
            raise PlanError(f"--space: {part!r} has no NAME= before it", HINT)
    params, seen = [], set()
    for name, values in specs:
        if name in seen:
            raise PlanError(f"--space: {name} is given twice", HINT)
        seen.add(name)
        ann = _field_type(name)
        if values == [""]:  # `lr=`: a shell variable that was empty, or a value not yet typed
            raise _missing(name, ann, f"no value after '{name}='")
        if "" in values:
            raise _missing(name, ann, f"an empty choice right after '{name}='")
        if len(values) == 1 and ".." in values[0]:
            rng, _, scale = values[0].partition(":")
            lo_s, _, hi_s = rng.partition("..")
            if not lo_s.strip() or not hi_s.strip():
                raise _missing(name, ann, f"the range {rng!r} lacks its {'LOW' if not lo_s.strip() else 'HIGH'} end")
            if scale not in ("", "log"):
                raise PlanError(f"--space {name}: unknown scale {scale!r} (only :log)", HINT)
            if ann not in (int, float):
                raise PlanError(f"--space {name}: a range needs a numeric field; give choices (A,B,C)", HINT)
            lo, hi = _number(lo_s, name), _number(hi_s, name)
            if not lo < hi:
                raise PlanError(f"--space {name}: the range {lo:g}..{hi:g} is empty", HINT)
            if scale == "log" and lo <= 0:
                raise PlanError(f"--space {name}: a log range must be above 0", HINT)
            param = Param(name, lo, hi, scale == "log", ann is int)
            probes: list[Any] = [int(lo), int(hi)] if ann is int else [lo, hi]
        else:
            choices = tuple(dict.fromkeys(_choice(name, v, ann) for v in values))
            param = Param(name, choices=choices)
            probes = list(choices)
        for value in probes:  # every value the sampler may pick must make a valid plan
            try:
                base.with_changes(**{name: value})
            except PlanError as err:
                raise PlanError(f"--space {name}={value}: {err.message}", err.hint or HINT) from None
        params.append(param)
    return params


def suggest(trial: Any, params: list[Param]) -> dict[str, Any]:
    """The trial's values (an Optuna trial)."""
    out: dict[str, Any] = {}
    for p in params:
        if p.choices:
            out[p.name] = trial.suggest_categorical(p.name, list(p.choices))
        elif p.integer:
            out[p.name] = trial.suggest_int(p.name, int(p.low), int(p.high), log=p.log)
        else:
            out[p.name] = trial.suggest_float(p.name, float(p.low), float(p.high), log=p.log)
    return out
