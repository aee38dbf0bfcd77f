"""Startup: the wizard's UI path imports no torch / deepspeed / transformers (what keeps the first frame
quick), and the first frame is the hardware screen. How quick is measured by benchmarks/wizard_latency.py
(results in benchmarks/results/wizard-latency.json), not asserted in a unit test."""
from __future__ import annotations

import json
import subprocess
import sys

from wizard_helpers import pilot_test
from zerotui.tui.app import ZeroTuiApp
from zerotui.tui.wizard.demo_hardware import workstation_24gb

HEAVY = ("torch", "deepspeed", "transformers", "peft", "datasets", "pandas", "pyarrow")

PROBE = """
import json, sys
import zerotui.tui.launch, zerotui.tui.app
from zerotui.tui.wizard import hardware
from zerotui.tui.wizard import model
from zerotui.tui.wizard import data_method
from zerotui.tui.wizard import precision
from zerotui.tui.wizard import zero_offload
from zerotui.tui.wizard import review
from zerotui.tui.wizard import fit
from zerotui.tui.common import help
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def test_ui_path_imports_nothing_heavy():
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == []


@pilot_test
async def test_first_frame_is_the_hardware_screen():
    app = ZeroTuiApp(hardware=workstation_24gb())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert type(app.screen).__name__ == "HardwareScreen"
