"""`--space` with a value missing (`lr=`, an empty shell variable; `lr=1e-5..`) names the parameter and the
forms it takes, instead of "'' is not a number"."""
from __future__ import annotations

import pytest
from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan
from zerotui.core.sweep.space import parse_space

NUMERIC = "give a range {n}=LOW..HIGH or {n}=LOW..HIGH:log (log scale), or choices {n}=A,B,C"


@pytest.mark.parametrize("space, start", [
    ("lr=", "--space lr: no value after 'lr='"),
    ("grad_accum=4,8,lr=", "--space lr: no value after 'lr='"),
    ("lr=,1e-4", "--space lr: an empty choice right after 'lr='"),
    ("lr=1e-5..", "--space lr: the range '1e-5..' lacks its HIGH end"),
    ("lr=..3e-4:log", "--space lr: the range '..3e-4' lacks its LOW end"),
])
def test_a_missing_number_names_the_parameter_and_the_forms(space, start):
    with pytest.raises(PlanError) as err:
        parse_space(space, Plan(name="p", max_steps=4))
    assert err.value.message == f"{start}; {NUMERIC.format(n='lr')}"
    assert "''" not in err.value.one_line() and "e.g. --space lr=1e-5..3e-4:log" in err.value.hint


def test_a_missing_choice_of_a_named_set_lists_the_set():
    with pytest.raises(PlanError) as err:
        parse_space("method=", Plan(name="p", max_steps=4))
    assert err.value.message == ("--space method: no value after 'method='; "
                                 "give choices method=A,B,C (of: full, lora, qlora)")


def test_the_cli_says_it_in_one_line_and_writes_nothing(tmp_path, zerotui_cli):
    r = zerotui_cli("sweep", "tiny-cpu-demo", "--trials", "2", "--space", "lr=", "--max-steps", "4")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "--space lr: no value after 'lr='" in r.stderr and "lr=LOW..HIGH" in r.stderr and "lr=A,B,C" in r.stderr
    assert not (tmp_path / "runs" / "sweeps").exists()
