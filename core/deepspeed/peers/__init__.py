"""Training configs of peer tools as the start of a Plan: LLaMA-Factory's and axolotl's training YAML,
next to DeepSpeed's own ds_config.json (``zerotui import FILE`` and ``--plan FILE``).

- ``sniff``: reads a file once and says which of these it is, or refuses it naming what it saw;
- ``mapper``: what both YAML formats share (typed fields, one warning per key not carried over, paths,
  precision, LoRA targets, the local dataset, the DeepSpeed file they name);
- ``llamafactory`` and ``axolotl``: one table of keys each;
- ``load``: ``import_training_config(path, overrides)`` (any of the three) and ``peer_plan(path)``
  (a peer YAML or ``None``), the DeepSpeed file's ZeRO part read through ``import_config``.

May import: ``plan``, ``model`` (the linear layers 'all' means), the modules of ``deepspeed`` itself and
the base modules (``safe_read`` for every file read); never ``data`` (the dataset is named, not read) or
anything above ``deepspeed``.
"""
from zerotui.core.deepspeed.peers.load import import_training_config, peer_plan

__all__ = ["import_training_config", "peer_plan"]
