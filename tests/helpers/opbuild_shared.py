"""Helpers of the op-build tests (tests/unit/test_opbuild.py, tests/deepspeed/test_opbuild_run.py).
"""
from __future__ import annotations

import os
import sys




BIN = os.path.dirname(sys.executable)
