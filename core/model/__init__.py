"""Models: the shape a plan's model has (``spec``: ModelSpec from a config, a known name or the tiny
model), the built-in tiny model, FLOPs per token, and loading model + tokenizer (+ PEFT adapters) for
training.

May import: ``plan`` and the base modules.
"""
