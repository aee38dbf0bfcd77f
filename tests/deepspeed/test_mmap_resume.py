"""Resume through mapped loads (core/train/mmap_load.py) on real DeepSpeed engines: the state comes back
equal and no optimizer tensor is left as a view of the checkpoint's files (a CPU optimizer keeps loaded
tensors as they are, and would keep a pruned checkpoint's disk space until the process ends)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from zerotui.core.train.distributed import free_port

HELPER = Path(__file__).resolve().parents[1] / "helpers" / "mmap_resume.py"


@pytest.mark.parametrize("stage", [0, 3])
def test_mapped_resume_restores_the_state_and_leaves_no_mapping(stage):
    p = subprocess.run([sys.executable, str(HELPER), str(stage), str(free_port())], capture_output=True,
                       text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["moments"] > 0 and out["equal"]
    assert out["mappings_left"] == 0
