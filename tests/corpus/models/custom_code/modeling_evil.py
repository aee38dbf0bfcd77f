# See configuration_evil.py: importing this module is the thing that must not happen without opt-in.
import os
from pathlib import Path

Path(os.environ.get("ZEROTUI_TEST_MARKER", "REMOTE_CODE_RAN")).write_text("modeling_evil.py was imported\n")

from transformers import LlamaForCausalLM

from .configuration_evil import EvilConfig


class EvilForCausalLM(LlamaForCausalLM):
    config_class = EvilConfig
