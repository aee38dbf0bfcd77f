"""The wizard's answers → Plan logic, without a screen: parsing, per-field errors, last valid Plan."""
from __future__ import annotations

from pathlib import Path

import pytest

from zerotui.core.errors import PlanError
from zerotui.core.plan.schema import Plan
from zerotui.tui.wizard.state import WizardState, parse_field


def test_text_becomes_the_field_type():
    assert parse_field("micro_batch", " 4 ") == 4
    assert parse_field("lr", "2e-5") == pytest.approx(2e-5)
    assert parse_field("lora_targets", "q_proj, v_proj,") == ["q_proj", "v_proj"]
    assert parse_field("max_steps", "") is None            # optional: empty means "not set"
    assert parse_field("nvme_path", "~/swap") == Path("~/swap").expanduser()
    with pytest.raises(PlanError, match="micro_batch: 'four' is not a whole number"):
        parse_field("micro_batch", "four")


def test_a_bad_answer_is_marked_and_the_last_valid_plan_is_kept():
    s = WizardState()
    assert s.set("micro_batch", "8")
    assert s.plan.micro_batch == 8
    assert not s.set("micro_batch", "eight")
    assert s.errors == {"micro_batch": "'eight' is not a whole number (type digits, e.g. 4)"}
    assert s.plan.micro_batch == 8 and s.value("micro_batch") == "eight"
    assert not s.set("lr", "5")                             # out of range: both problems shown at once
    assert set(s.errors) == {"micro_batch", "lr"}
    assert "less than 1" in s.errors["lr"]
    assert not s.set("micro_batch", "2")
    assert set(s.errors) == {"lr"}
    assert s.set("lr", "1e-4")
    assert s.valid and s.plan.micro_batch == 2 and s.plan.lr == pytest.approx(1e-4)


def test_cross_field_rules_land_on_the_field_they_name():
    s = WizardState()
    assert not s.set("offload_params", "cpu")               # needs stage 3
    assert list(s.errors) == ["offload_params"] and "needs stage 3" in s.errors["offload_params"]
    with pytest.raises(PlanError, match="offload_params"):
        s.validated_plan()
    assert s.set("stage", 3)
    assert s.plan.offload_params == "cpu" and s.plan.stage == 3
    assert not s.set("offload_optimizer", "nvme")
    assert "nvme_path is required" in s.errors["nvme_path"]


def test_replace_plan_takes_every_answer_and_clears_errors():
    s = WizardState()
    s.set("micro_batch", "x")
    other = Plan(model="llama-2-7b", stage=3, offload_optimizer="cpu", offload_params="cpu", micro_batch=2)
    rev = s.revision
    s.replace_plan(other)
    assert s.valid and s.plan == other and s.value("micro_batch") == 2 and s.revision > rev
