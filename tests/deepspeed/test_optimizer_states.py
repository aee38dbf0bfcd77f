"""Adam's state made when training starts (core/train/optimizer_state.py) on real DeepSpeed engines, at
every ZeRO stage: it is what torch makes at the first step (same tensors, same places), it is made once,
it leaves no gradient behind, and training from it gives bit-identical losses, weights and moments."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from zerotui.core.train.distributed import free_port

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "optimizer_states.py"


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_states_made_up_front_train_exactly_as_torchs_lazy_ones(stage):
    p = subprocess.run([sys.executable, str(HELPER), str(stage), str(free_port())], capture_output=True,
                       text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["stateless_before"]
    assert out["made"] == 8 * out["fp32_elements"] > 0  # exp_avg and exp_avg_sq, fp32, every element
    assert out["made_again"] == 0 and out["grads_left"] == 0
    assert out["layout_equal"]
    eager, lazy = out["losses"]
    assert eager == lazy and eager[-1] != eager[0]
    assert out["same_results"]
