"""Training data: files and formats (``files``), prompt and chat templates (``prompts``),
tokenisation and packing (``tokenise``), the train/eval sets with their cache (``prepare``), and the
resumable, rank-sharded order of examples (``sampler``).

May import: ``plan`` and the base modules (a tokenizer is handed in; the data never loads a model).
"""
