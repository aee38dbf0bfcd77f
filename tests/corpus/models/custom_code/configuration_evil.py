# A model repository's own code. zerotui must never import this unless the user opts in with
# --trust-remote-code: importing it leaves a marker file, which tests/unit/test_security.py looks for.
import os
from pathlib import Path

Path(os.environ.get("ZEROTUI_TEST_MARKER", "REMOTE_CODE_RAN")).write_text("configuration_evil.py was imported\n")

from transformers import LlamaConfig


class EvilConfig(LlamaConfig):
    model_type = "zerotui-evil"
