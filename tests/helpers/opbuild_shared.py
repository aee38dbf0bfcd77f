"""What DeepSpeed's op builds need (core/deepspeed/opbuild.py): the virtual environment's ninja when zerotui runs
without the venv on PATH, and no wait on a lock that a killed build left behind. Also: a run leaves no
shared-memory buffer behind in /dev/shm (engine._release_shm_name)."""
from __future__ import annotations

import os
import sys




BIN = os.path.dirname(sys.executable)
