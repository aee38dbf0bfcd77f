"""Files shipped with the core: the sample dataset and the built-in tiny tokenizer."""
