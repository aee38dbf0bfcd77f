"""The DeepSpeed training run inside a worker process: ``engine.train`` prepares data, model and
engine; ``loop`` runs the optimizer steps; checkpoints, the fp16 loss scale, bad-step handling, the LR
schedule, decisions shared by every rank, ``final/``, and the control flags the worker's main thread
sets.

May import: ``deepspeed``, ``data``, ``model``, ``plan`` and the base modules. It emits events through
the ``emit`` callable it is given; it never writes files other than checkpoints and ``final/``.
"""
