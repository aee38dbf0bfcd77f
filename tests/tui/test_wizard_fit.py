"""The wizard's Fit says what `zerotui fit` says for the same plan on the same machine: the same ranked
plans, and when nothing fits, the same ways out (LoRA and QLoRA for a 7B full fine-tune on 24 GB / 64 GB)."""
from __future__ import annotations

from wizard_helpers import pilot_test, settle
from zerotui.cli.main import main as cli_main
from zerotui.core.hardware.detect import stated_hardware
from zerotui.tui.common.tui_words import in_tui_words
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only
from zerotui.tui.wizard.fit import FitScreen

PRESET = "llama7b-24gb-zero3-cpu"  # 154 GiB of host RAM: nothing that keeps the full fine-tune fits 64 GiB


def _cli_lines(monkeypatch, capsys) -> list[str]:
    # the CLI detects the machine under what is stated: the same base as the wizard's, no NVMe disk
    monkeypatch.setattr("zerotui.core.hardware.detect.detect", lambda probe_disks=True: cpu_only())
    capsys.readouterr()
    assert cli_main(["fit", PRESET, "--gpu-mem", "24GiB", "--ram", "64GiB"]) == 3  # 3: nothing fits
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "nothing fits:"
    return [line.strip() for line in out[1:]]


@pilot_test
async def test_nothing_fits_lists_the_same_ways_out_as_the_cli(monkeypatch, capsys):
    cli = _cli_lines(monkeypatch, capsys)
    assert any("--method lora" in line for line in cli) and any("--method qlora" in line for line in cli)
    hw = stated_hardware(gpu_mem="24GiB", gpus=1, ram="64GiB", base=cpu_only())
    app = ZeroTuiApp(hardware=hw, preset=PRESET)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert isinstance(app.screen, FitScreen)
        assert app.last_fit.why_not == cli
        shown = str(app.screen.query_one("#fit-why").render())
        for line in cli:  # the same ways out, with the wizard's field names for the CLI's flags
            assert f"• {in_tui_words(line)}" in shown
