"""Helpers of the fault tests (tests/unit/test_faults.py, tests/deepspeed/test_faults_engine.py).
"""
from __future__ import annotations





