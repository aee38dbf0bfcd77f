"""The preset picker says whether each preset fits this machine, by the same estimator as the budget."""
from __future__ import annotations

from wizard_helpers import pilot_test, settle
from zerotui.core.estimate.budget import estimate, host_room
from zerotui.core.plan.presets import load_preset
from zerotui.core.sizes import format_bytes
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb
from zerotui.tui.wizard.preset_fit import fit_mark
from zerotui.tui.wizard.preset_picker import PresetPickerScreen


def test_marks_on_a_24gb_workstation_follow_the_estimator():
    hw = workstation_24gb()
    plan = load_preset("llama7b-24gb-zero3-cpu")
    need = estimate(plan, hw).cpu_bytes
    assert need > hw.ram_total_bytes  # the preset "for a 24 GB GPU" needs ~154 GiB of host RAM
    # the machine's 60 GiB free, less the system's reserve (core/estimate/budget.py host_room)
    assert fit_mark(plan, hw) == f"needs {format_bytes(need)} host RAM, {format_bytes(host_room(hw))} usable here"
    assert fit_mark(load_preset("llama7b-24gb-lora"), hw) == "fits"
    assert fit_mark(load_preset("llama70b-lora-8gpu-zero3"), hw) == "needs 8 GPUs, 1 here"


def test_without_a_gpu_a_fitting_preset_says_it_would_run_on_the_cpu():
    assert fit_mark(load_preset("tiny-cpu-demo"), cpu_only()) == "fits, on the CPU (no GPU here)"


@pilot_test
async def test_the_picker_shows_each_presets_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, PresetPickerScreen)
        options = app.screen.query_one("#preset-options")
        prompts = {options.get_option_at_index(i).id: str(options.get_option_at_index(i).prompt)
                   for i in range(options.option_count)}
        zero3_cpu = fit_mark(load_preset("llama7b-24gb-zero3-cpu"), workstation_24gb())
        assert zero3_cpu.startswith("needs ") and f"host RAM, {format_bytes(host_room(app.hardware))} usable here" in zero3_cpu
        assert f"✗ {zero3_cpu}" in prompts["llama7b-24gb-zero3-cpu"]
        assert "✓ fits" in prompts["llama7b-24gb-lora"]
        assert "needs 8 GPUs" in prompts["llama70b-qlora-8gpu-zero3"]
        assert not any("checking" in p for p in prompts.values())
