"""Core's messages in the TUI's words: core writes its hints for the command line ("--force launches
anyway", "a higher --max-steps"), and the same text in the wizard pointed at flags a person there cannot
type. The TUI has a button, key or field for each: this names that instead.

Whole phrases first (so the sentence still reads), then single flags.
"""
from __future__ import annotations

import re

PHRASES = (
    ("`zerotui fit` lists plans that fit; --force launches anyway",
     'Fit (ctrl+g) applies a plan that fits; "Launch anyway" on the review starts this one as it is'),
    ("--force launches anyway", '"Launch anyway" on the review starts it as it is'),
    ("start a new run with `zerotui train` (e.g. with a higher --max-steps)",
     "start a new run in the wizard, with a higher Max steps on step 2"),
    ("(ignored with --max-steps)", "(ignored when Max steps is set)"),
    ("give --nvme-path a folder", "choose an NVMe folder (step 4)"),
    ("give --nvme-path DIR", "choose an NVMe folder (step 4)"),
    ("plan with --model-config config.json or", "choose a config.json under Config only, or"),
    ("`zerotui estimate --model-config`", "Config only (a config.json)"),
    ("add --trust-remote-code (trust_remote_code: true in a plan)", "turn on Remote code"),
)
#: Each plan flag core names, as the wizard labels its field.
FLAGS = {
    "--max-steps": "Max steps",
    "--force": '"Launch anyway"',
    "--nvme-path": "the NVMe folder",
    "--micro-batch": "Micro-batch",
    "--grad-accum": "Accumulation",
    "--seq-len": "Sequence length",
    "--gpus": "GPUs to use",
    "--stage": "ZeRO stage",
    "--precision": "Precision",
    "--method": "Method",
    "--offload-optimizer": "Optimizer offload",
    "--offload-params": "Weight offload",
    "--quant-bits": "Base weights",
    "--model-config": "Config only",
    "--attention": "Attention",
    "--trust-remote-code": "Remote code",
}
_FLAG = re.compile("|".join(re.escape(f) for f in sorted(FLAGS, key=len, reverse=True)) + r"\b")


def in_tui_words(text: str) -> str:
    for cli, tui in PHRASES:
        text = text.replace(cli, tui)
    return _FLAG.sub(lambda m: FLAGS[m.group(0)], text)
