"""fp16 at ZeRO-0 through zerotui's ``scaled_for_backward`` (core/train/stage0_scale.py), on real DeepSpeed
engines on the CPU (tests/helpers/stage0_scale.py): DeepSpeed 0.19.8's stage-0 FP16_Optimizer keeps a loss
scale its engine never multiplies into the loss, so from 2^32 it never overflows and never moves. With
zerotui's loss it must overflow, skip and halve exactly as the same model does at ZeRO-1, where DeepSpeed
scales the loss itself, and at ZeRO-1 it must change nothing (no second scaling)."""
import json
import math
import subprocess
import sys
from pathlib import Path

from zerotui.core.train.distributed import free_port

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "stage0_scale.py"


def test_stage0_fp16_scale_moves_like_zero1_and_zero1_is_not_scaled_twice():
    p = subprocess.run([sys.executable, str(HELPER), str(free_port())], capture_output=True, text=True,
                       timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    runs = {(r["stage"], r["fixed"]): r for r in map(json.loads, (l for l in p.stdout.splitlines() if l.startswith("{")))}
    z0_fixed, z1_plain, z1_fixed = runs[0, True], runs[1, False], runs[1, True]
    assert z0_fixed["optimizer"] == "FP16_Optimizer" and z1_plain["optimizer"] == "DeepSpeedZeroOptimizer"
    # ZeRO-1 as DeepSpeed does it: the scale falls from 2^32 through overflows, then some steps apply
    assert z1_plain["scales"][0] < 2.0 ** 32 and 0 < z1_plain["skipped"] < len(z1_plain["scales"])
    # ZeRO-0 with zerotui's loss: the same overflows, the same scale after every step
    assert z0_fixed["scales"] == z1_plain["scales"]
    assert z0_fixed["skipped"] == z1_plain["skipped"]
    assert all(math.log2(s).is_integer() for s in z0_fixed["scales"])
    # where DeepSpeed already scales, the wrapper is an identity: the same run to the last bit
    assert z1_fixed["scales"] == z1_plain["scales"] and z1_fixed["skipped"] == z1_plain["skipped"]
    assert z1_fixed["params"] == z1_plain["params"]
