"""The one bounded way in (core/safe_read.py): special files never block, sizes, nesting, alias
expansion and numbers are bounded, and — property-based — any bytes or any JSON/YAML value given to
the plan and ds_config readers becomes a valid result or one clean error, never another exception."""
from __future__ import annotations

import json
import os
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zerotui.core.deepspeed.read import read_ds_config
from zerotui.core.errors import ConfigImportError, PlanError
from zerotui.core.plan.schema import Plan, load_plan, plan_from_dict, plan_from_yaml
from zerotui.core.safe_read import (InputFileError, ValueProblem, check_value, load_json, load_yaml, open_regular,
                                    quote, read_bytes)

#: Bounded so the unit tier stays fast (each example is a few milliseconds).
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def within(seconds: float, fn, *args):
    """``fn(*args)`` in a thread; fails the test if it has not returned within ``seconds`` (a hang)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            box["error"] = err

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn.__name__} blocked for {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# -- special files --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "socket", "folder", "device", "link-to-fifo"])
def test_special_files_are_refused_at_once_by_name(tmp_path, kind):
    p = tmp_path / "thing.yaml"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    elif kind == "folder":
        p.mkdir()
    elif kind == "device":
        p = tmp_path / "null"
        os.symlink("/dev/null", p)
    else:
        os.mkfifo(tmp_path / "fifo")
        os.symlink("fifo", p)
    with pytest.raises(OSError):
        within(5, read_bytes, p, 1024)
    with pytest.raises(PlanError) as err:
        within(5, load_plan, p)
    assert str(p) in err.value.message and err.value.hint


def test_a_symlink_is_refused_where_links_are_not_followed(tmp_path):
    (tmp_path / "real.json").write_text("{}")
    os.symlink("real.json", tmp_path / "link.json")
    assert read_bytes(tmp_path / "link.json", 100) == b"{}"  # given by the user: followed
    with pytest.raises(InputFileError, match="symlink"):
        open_regular(tmp_path / "link.json", follow=False)  # a run folder's own file: never


def test_a_file_over_the_limit_is_refused_by_size(tmp_path):
    p = tmp_path / "big.yaml"
    p.write_bytes(b"#" * 2048)
    with pytest.raises(InputFileError, match="more than the 1 KiB"):
        read_bytes(p, 1024)


# -- values ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, what", [
    ("[" * 5000 + "]" * 5000, "nested more than"), ('{"a": 1e400}', "not a finite number"),
    ('{"a": NaN}', "not a finite number"), ('{"a": -Infinity}', "not a finite number"),
    ('{"a": ' + "9" * 5001 + "}", "5001 digits"), ('{"a": ' + "9" * 25 + "}", "25 digits"),
])
def test_json_bounds_name_the_field(text, what):
    with pytest.raises(ValueProblem, match=what) as err:
        load_json(text)
    assert err.value.where in ("", "a")


def test_a_yaml_alias_bomb_stops_at_the_value_budget_quickly():
    bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
    with pytest.raises(ValueProblem, match="more than 10,000 values"):
        within(5, load_yaml, bomb, 32, 10_000)
    assert load_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}  # small aliases are fine


@pytest.mark.parametrize("text", ["a: .inf", "a: -.inf", "a: .nan", "a: " + "9" * 5001, "a: !!binary aGk=",
                                  "a: !!set {x}", "a: 2024-01-01", "- " * 40 + "1"])
def test_yaml_values_beyond_plain_bounded_data_are_refused(text):
    with pytest.raises(ValueProblem):
        load_yaml(text)


def test_quotes_of_hostile_values_stay_short():
    for value in ("x" * 10**6, 10**5000, [[1] * 10**4] * 10, {"k" * 10**5: 1}):
        assert len(quote(value)) <= 60
    assert check_value({"a": [1, 2.5, "x", None, True]}) == {"a": [1, 2.5, "x", None, True]}


# -- properties: the plan and ds_config readers -----------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20)
field_names = st.sampled_from(list(Plan.model_fields) + ["model_config", "ds_overrides", "zzz"])
plan_like = st.dictionaries(field_names, json_values, max_size=6)


@PROPERTY
@given(st.binary(max_size=400))
def test_any_bytes_as_a_plan_file_is_a_plan_or_a_plan_error(tmp_path, blob):
    p = tmp_path / "plan.yaml"
    p.write_bytes(blob)
    try:
        assert isinstance(load_plan(p), Plan)
    except PlanError as err:
        assert err.one_line() and len(err.one_line()) <= 600


@PROPERTY
@given(st.text(max_size=300))
def test_any_text_as_yaml_is_a_plan_or_a_plan_error(text):
    try:
        assert isinstance(plan_from_yaml(text, "p.yaml"), Plan)
    except PlanError:
        pass


@PROPERTY
@given(st.one_of(json_values, plan_like))
def test_any_value_as_a_plan_is_a_plan_or_a_plan_error(value):
    try:
        plan = plan_from_dict(value, "p")
    except PlanError as err:
        assert "\n" not in err.one_line()
        return
    json.dumps(plan.to_dict(), allow_nan=False)  # whatever is accepted is finite, plain JSON


@PROPERTY
@given(st.one_of(json_values, plan_like))
def test_any_value_dumped_as_yaml_is_a_plan_or_a_plan_error(value):
    import yaml

    try:
        text = yaml.safe_dump(value)
    except (yaml.YAMLError, ValueError, OverflowError):
        return
    try:
        plan_from_yaml(text, "p.yaml")
    except PlanError:
        pass


@PROPERTY
@given(st.binary(max_size=400))
def test_any_bytes_as_a_ds_config_is_a_config_or_an_import_error(tmp_path, blob):
    p = tmp_path / "ds_config.json"
    p.write_bytes(blob)
    try:
        cfg, warnings = read_ds_config(p)
    except ConfigImportError as err:
        assert err.one_line()
        return
    assert isinstance(cfg, dict)
    json.dumps(cfg, allow_nan=False)


@PROPERTY
@given(json_values)
def test_any_json_value_as_a_ds_config_is_a_config_or_an_import_error(tmp_path, value):
    p = tmp_path / "ds_config.json"
    try:
        p.write_text(json.dumps(value))
    except (ValueError, OverflowError):
        return
    try:
        read_ds_config(p)
    except ConfigImportError:
        pass


def test_a_key_given_twice_is_refused_with_its_line_and_merge_keys_still_work():
    """yaml.safe_load keeps the last of two equal keys silently (`model:` twice trained the second)."""
    from zerotui.core.safe_read import ValueProblem, load_yaml

    with pytest.raises(ValueProblem) as err:
        load_yaml("model: tiny\nmicro_batch: 2\nmodel: other\n")
    assert (err.value.where, err.value.what) == ("model", "is given twice (again on line 3)")
    with pytest.raises(ValueProblem, match="given twice"):
        load_yaml("ds_overrides:\n  zero_optimization: {stage: 2}\n  zero_optimization: {stage: 3}\n")
    # YAML's merge key and the same key in different mappings are not duplicates
    assert load_yaml("base: &b {a: 1}\nx:\n  <<: *b\n  a: 2\ny: {a: 3}\n") == {"base": {"a": 1}, "x": {"a": 2},
                                                                               "y": {"a": 3}}
