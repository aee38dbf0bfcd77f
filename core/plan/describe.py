"""Pydantic's validation errors as the one line a person reads: the file, the field, what was given (cut
short: a 4.6 MB value is not worth quoting) and what is accepted."""
from __future__ import annotations

import re

from pydantic import ValidationError

from zerotui.core.errors import PlanError
from zerotui.core.safe_read import QUOTE_CHARS, quote


def describe_validation_error(err: ValidationError, source: str, names: list[str]) -> str:
    """One line naming the first problem: the field, what was given, what is accepted."""
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e.get("loc", ()) if p != "__root__")
    kind = e.get("type", "")
    msg = e.get("msg", "invalid")
    where = f"{source}: " if source else ""
    if kind == "extra_forbidden":
        close = _close_names(loc, names)
        hint = f"; did you mean {close}?" if close else ""
        return f"{where}unknown key '{loc}'{hint}"
    if kind == "value_error":
        # model_validator messages are already written for people.
        return f"{where}{msg.removeprefix('Value error, ')}"
    given = e.get("input")
    given_s = "" if isinstance(given, dict) else f" (got {quote(given)})"
    if kind == "string_pattern_mismatch":  # a regular expression means nothing to most users
        msg = "must use only letters, digits, '.', '_' and '-', starting with a letter or digit"
    # pydantic says "Input should be ...", "String should have ...", "List should have ...".
    msg = re.sub(r"^(?:Input|String|List|Dictionary|Value) should\b", "must", msg)
    return f"{where}field '{loc}': {msg}{given_s}"


def _close_names(name: str, names: list[str]) -> str:
    import difflib

    hits = difflib.get_close_matches(name, names, n=2, cutoff=0.6)
    return " or ".join(f"'{h}'" for h in hits)


def yaml_error(err: Exception, source: str) -> PlanError:
    """A YAML loader's error as one PlanError line: the file, the line and column, and the fix."""
    import yaml

    if isinstance(err, yaml.constructor.ConstructorError) and "tag" in str(getattr(err, "problem", "")):
        # safe_load knows no !!python/... tags: such a file asks to run code when loaded. Say that plainly.
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        tag = (getattr(err, "problem", None) or "an unknown tag").split(" tag ")[-1][:QUOTE_CHARS]
        return PlanError(f"{source}: refused the YAML tag {tag}{where}: plan files hold plain values, and a "
                         "tag like this asks the loader to build objects (or run code)",
                         "remove the tag; write the value itself, e.g. 'name: my-run'")
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(err, "problem", None) or "not valid YAML"
    context = getattr(err, "context", None)  # "expected a single document in the stream", ...
    if context and context not in problem:
        problem = f"{context}, {problem}"
    return PlanError(f"{source}: {problem[:200]}{where}", "fix the YAML syntax (indentation, ':' after each key)")
