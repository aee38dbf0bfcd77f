"""Adam's state made when training starts (core/train/optimizer_state.py) on real DeepSpeed engines: with
the optimizer section zerotui writes (DeepSpeed builds its FusedAdam) at every ZeRO stage, and with
torch's AdamW (the estimator's sweeps). The state is what the optimizer makes at its first step (same
tensors, same places), it is made once, the weights are untouched, no gradient is left behind, and
training from it gives bit-identical losses, weights and moments."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from zerotui.core.train.distributed import free_port

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "optimizer_states.py"
CASES = [(0, "zerotui"), (1, "zerotui"), (2, "zerotui"), (3, "zerotui"), (1, "torch"), (3, "torch")]


@pytest.mark.parametrize("stage,kind", CASES)
def test_states_made_up_front_train_exactly_as_lazy_ones(stage, kind):
    p = subprocess.run([sys.executable, str(HELPER), str(stage), str(free_port()), kind], capture_output=True,
                       text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["optimizer"] == {"zerotui": "FusedAdam", "torch": "AdamW"}[kind]
    assert out["stateless_before"]
    assert out["made"] == 8 * out["fp32_elements"] > 0  # exp_avg and exp_avg_sq, fp32, every element
    assert out["made_again"] == 0 and out["grads_left"] == 0 and out["weights_untouched"]
    assert out["layout_equal"]
    assert out["checked_tensors"] >= 3  # the weights and both moments at least
    eager, lazy = out["losses"]
    assert eager == lazy and eager[-1] != eager[0]
    assert out["same_results"]
