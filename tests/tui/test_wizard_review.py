"""The review's actions by keyboard: copy the config and the command, Save preset (never a silent
overwrite), Export (the same files as `zerotui export`), and Launch refused while the plan cannot run."""
from __future__ import annotations

import json

import pytest
from textual.widgets import Button, Input

from wizard_helpers import pilot_test, settle, step
from zerotui.core.plan.presets import load_preset
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb


PRESET = "llama7b-24gb-zero3-cpu"


@pytest.fixture(autouse=True)
def _presets(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))


async def _type(pilot, selector: str, text: str) -> None:
    box = pilot.app.screen.query_one(selector, Input)
    box.focus()
    await pilot.press("home", "ctrl+k", *list(text))
    await settle(pilot)


@pilot_test
async def test_copy_config_and_command():
    app = ZeroTuiApp(hardware=workstation_24gb(), preset=PRESET, runs_dir=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        config = json.loads(app.clipboard)
        assert config["zero_optimization"]["stage"] == 3 and config["train_batch_size"] == 16
        await pilot.press("y")
        assert "-m zerotui.core.run.worker" in app.clipboard and "llama7b-24gb-zero3-cpu" in app.clipboard


@pilot_test
async def test_save_preset_never_overwrites_silently(tmp_path):
    app = ZeroTuiApp(hardware=workstation_24gb(), preset=PRESET)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await _type(pilot, "#preset-name", "my-7b")
        await pilot.press("enter")
        await settle(pilot)
        saved = tmp_path / "presets" / "my-7b.yaml"
        assert saved.exists() and step(pilot) == "review"
        assert load_preset("my-7b").stage == 3
        first = saved.read_text()
        app.apply_plan(app.state.plan.with_changes(micro_batch=1))
        await pilot.press("s")
        await settle(pilot)
        await _type(pilot, "#preset-name", "my-7b")
        await pilot.press("enter")                              # exists: asks, does not write
        await settle(pilot)
        assert saved.read_text() == first
        assert app.screen.query_one("#preset-overwrite").display
        assert "already exists" in str(app.screen.query_one("#preset-note").render())
        app.screen.query_one("#preset-overwrite", Button).press()
        await settle(pilot)
        assert load_preset("my-7b").micro_batch == 1 and step(pilot) == "review"
        await pilot.press("s")
        await settle(pilot)
        await _type(pilot, "#preset-name", "bad name!")
        await pilot.press("enter")
        await settle(pilot)
        assert "name" in str(app.screen.query_one("#preset-note").render())
        await pilot.press("escape")


@pilot_test
async def test_export_writes_the_cli_files_and_asks_before_replacing(tmp_path):
    out = tmp_path / "exported"
    app = ZeroTuiApp(hardware=workstation_24gb(), preset=PRESET)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        await _type(pilot, "#export-dir", str(out))
        await pilot.press("enter")
        await settle(pilot)
        assert sorted(p.name for p in out.iterdir()) == ["ds_config.json", "launch.sh", "plan.yaml"]
        assert json.loads((out / "ds_config.json").read_text())["zero_optimization"]["offload_param"]["device"] == "cpu"
        before = (out / "plan.yaml").read_text()
        await pilot.press("e")
        await settle(pilot)
        await _type(pilot, "#export-dir", str(out))
        await pilot.press("enter")
        await settle(pilot)
        assert "already has" in str(app.screen.query_one("#export-note").render())
        assert app.screen.query_one("#export-force").display and (out / "plan.yaml").read_text() == before


@pilot_test
async def test_launch_is_refused_with_the_reason_when_the_plan_does_not_fit(tmp_path):
    # The 7B preset on a GPU-less 24 GB box: valid, but far too big. Launch says why; "launch anyway" shows.
    app = ZeroTuiApp(hardware=cpu_only(), preset=PRESET, runs_dir=tmp_path / "runs")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.query_one("#launch", Button).disabled
        status = str(app.screen.query_one("#launch-status").render())
        assert "Launch is disabled" in status
        await pilot.press("l")
        await settle(pilot)
        assert not (tmp_path / "runs").exists() and step(pilot) == "review"


@pilot_test
async def test_launch_anyway_is_offered_only_for_does_not_fit(tmp_path):
    app = ZeroTuiApp(hardware=workstation_24gb(), preset=PRESET, runs_dir=tmp_path / "runs")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.apply_plan(app.state.plan.with_changes(stage=2, offload_optimizer="none", offload_params="none"))
        await settle(pilot)
        review = app.screen
        assert review.query_one("#launch", Button).disabled
        assert review.query_one("#launch-anyway", Button).display
        assert "does not fit: GPU needs" in str(review.query_one("#launch-status").render())
        await pilot.press("2")
        await settle(pilot)
        app.screen.query_one("#f-micro_batch", Input).focus()
        await pilot.press("home", "ctrl+k", "x")
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert not app.screen.query_one("#launch-anyway", Button).display   # invalid: no way round it
        assert "micro_batch" in str(app.screen.query_one("#launch-status").render())
