"""`estimate` and `export` accept the same plans: one ds_overrides check (core/deepspeed/overrides.py)
decides for both, and for the launch. Each case runs both real commands on the same plan."""
from __future__ import annotations

import json

import pytest
from cli_capture import run

# (ds_overrides, what the one line must name); None: both commands accept it
CASES = [
    ('{"zero_optimization": {"reduce_bucket_size": 1000000}}', None),
    ('{"optimizer": {"type": "NoSuchOptimizer"}}', "NoSuchOptimizer"),
    ('{"train_batch_size": 8}', "train_batch_size"),
    ('{"zero_optimization": {"bogus_key": 1}}', "bogus_key"),  # DeepSpeed's own parser refuses it
    ('{"fp16": {"loss_scale": "high"}}', "loss_scale"),
]


@pytest.mark.parametrize("overrides,needle", CASES)
def test_estimate_and_export_agree(capsys, tmp_path, overrides, needle):
    out_dir = tmp_path / "export"
    est = run(capsys, "estimate", "tiny-cpu-demo", "--ds-overrides", overrides, "--json")
    exp = run(capsys, "export", "tiny-cpu-demo", "-o", str(out_dir), "--ds-overrides", overrides)
    if needle is None:
        assert est[0] == 0 and exp[0] == 0, (est[2], exp[2])
        written = json.loads((out_dir / "ds_config.json").read_text())
        assert written["zero_optimization"]["reduce_bucket_size"] == 1000000
        return
    for code, out, err in (est, exp):
        assert code == 2, err
        assert err.count("\n") == 1 and needle in err and "Traceback" not in err
    assert exp[1] == ""  # without --json nothing goes to stdout
    as_json = json.loads(est[1])  # --json: the same error as an object (with the field, when one is named)
    assert as_json["error"] == est[2].strip().removeprefix("zerotui: ") and as_json["exit_code"] == 2
    assert as_json.get("field", "ds_overrides") == "ds_overrides"
    assert est[2] == exp[2]  # the same check, so the same message
    assert not out_dir.exists()  # nothing half-written by the refused export


def test_train_refuses_before_any_run_folder(capsys, tmp_path):
    runs = tmp_path / "runs"
    code, _, err = run(capsys, "train", "tiny-cpu-demo", "--runs-dir", str(runs),
                         "--ds-overrides", '{"zero_optimization": {"bogus_key": 1}}')
    assert code == 2 and "bogus_key" in err
    assert not runs.exists() or not any(runs.iterdir())
