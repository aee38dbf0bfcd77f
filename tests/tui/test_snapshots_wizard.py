"""Snapshots (pytest-textual-snapshot) of each wizard screen at 80×24 and 160×48 (the steps at 200×50
too), on fixed fake hardware.

Deterministic by construction: fixed Hardware values, a fixed runs folder, a fixed interpreter name in the
launch command, empty preset / HF-cache folders, and the CPU's fp16 support pinned. Regenerate after an
intended change with ``pytest tests/tui/test_snapshots_wizard.py --snapshot-update`` and look at the
report before committing.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from snapshot_helpers import steady_frame
from wizard_helpers import settle
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb


NO_OFFLOAD = "no-offload"  # not a key: applies the preset without offload (stage 2)

SIZES = {"80x24": (80, 24), "160x48": (160, 48)}

# screen name -> (hardware, preset, keys pressed from the first screen)
SCREENS = {
    "hardware": ("workstation", None, []),
    "hardware_cpu_only": ("cpu", None, []),
    "model": ("workstation", None, ["n"]),
    "data_method": ("workstation", None, ["n", "ctrl+n"]),
    "precision": ("workstation", None, ["n", "ctrl+n", "ctrl+n"]),
    "precision_cpu_only": ("cpu", None, ["n", "ctrl+n", "ctrl+n"]),
    "zero_offload": ("workstation", "llama7b-24gb-zero3-nvme", ["4"]),
    "review": ("workstation", "llama7b-24gb-zero3-cpu", []),
    "review_cpu_only": ("cpu", "llama7b-24gb-zero3-cpu", []),
    "breakdown": ("workstation", "llama7b-24gb-zero3-cpu", ["3", "b"]),
    # 7B full fine-tune with no offload on 24 GB: red; Fit applies the best plan and lists the rest.
    "fit": ("workstation", "llama7b-24gb-zero3-cpu", ["4", NO_OFFLOAD, "ctrl+g"]),
    "help": ("workstation", None, ["n", "f1"]),
    "save_preset": ("workstation", "llama7b-24gb-zero3-cpu", ["s"]),
    "export": ("workstation", "llama7b-24gb-zero3-cpu", ["e"]),
    "preset_picker": ("workstation", None, ["p"]),
}


@pytest.fixture(autouse=True)
def _fixed_world(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr("sys.executable", "python")
    monkeypatch.chdir("/")  # the export dialog proposes a folder under the working directory
    monkeypatch.setattr("zerotui.tui.wizard.precision._cpu_has_fp16", lambda cpuinfo=None: False)


#: The five steps at 200×50 too: a large terminal must not leave them cut or stretched oddly.
WIDE = ("model", "data_method", "precision", "zero_offload", "review")
SIZES["200x50"] = (200, 50)
SIZES["120x40"] = (120, 40)  # a common SSH window: the steps whole, footers uncut
CASES = [(screen, size) for screen in SCREENS for size in SIZES if size in ("80x24", "160x48") or screen in WIDE]


@pytest.mark.parametrize("screen,size", CASES, ids=[f"{screen}-{size}" for screen, size in CASES])
def test_wizard_screen(snap_compare, screen, size):
    hardware, preset, presses = SCREENS[screen]
    hw = workstation_24gb() if hardware == "workstation" else cpu_only()
    app = ZeroTuiApp(hardware=hw, preset=preset, runs_dir=Path("/srv/zerotui/runs"))

    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in presses:
            if key == NO_OFFLOAD:
                app.apply_plan(app.state.plan.with_changes(stage=2, offload_optimizer="none",
                                                           offload_params="none"))
            else:
                await pilot.press(key)
            await settle(pilot)
        pilot.app.clear_notifications()
        await steady_frame(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)
