"""Model shapes and data for the throughput comparison, built here so nothing is downloaded.

Speed and memory do not depend on the weights' values, so the models are random-initialised
from a config and saved once as a normal Hugging Face folder that both contenders load.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

# TinyLlama-1.1B's published architecture (config.json of TinyLlama/TinyLlama-1.1B-intermediate-*):
# 22 layers, hidden 2048, MLP 5632, 32 heads with 4 KV heads, 32000 vocabulary: 1,100,048,384 weights.
SHAPES: dict[str, dict[str, Any]] = {
    "1.1b": dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                 num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
                 rms_norm_eps=1e-5, tie_word_embeddings=False),
    # The dry-run shape: zerotui's built-in tiny model (core/model/tiny.py), a few seconds a run on a CPU.
    "tiny": dict(vocab_size=1024, hidden_size=128, intermediate_size=352, num_hidden_layers=4,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                 rms_norm_eps=1e-5, tie_word_embeddings=False),
}


def build_model_folder(shape: str, folder: Path, seed: int = 0) -> Path:
    """Random weights of ``shape`` in bf16 plus zerotui's tiny tokenizer (ids < 1024 fit any vocab)."""
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from zerotui.core.model.tiny import tiny_tokenizer

    torch.manual_seed(seed)
    cfg = LlamaConfig(**SHAPES[shape], pad_token_id=0, bos_token_id=1, eos_token_id=2)
    with torch.device("cpu"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder), safe_serialization=True)
    tiny_tokenizer().save_pretrained(str(folder))
    return folder


def write_text_data(path: Path, rows: int, words_per_row: int, seed: int = 0) -> Path:
    """Plain-text rows longer than the sequence, so every sequence is cut to exactly seq_len tokens:
    the same fixed shape for both contenders, with no padding."""
    rng = random.Random(seed)
    vocab = [w.strip() for w in "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega "
             "river stone cloud green table light house water paper bread music horse plant".split()]
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(rows):
            fh.write(json.dumps({"text": " ".join(rng.choice(vocab) for _ in range(words_per_row))}) + "\n")
    return path


def write_varlen_data(path: Path, rows: int, median_words: int, max_words: int, seed: int = 0) -> Path:
    """Documents of many lengths, as instruction and chat data are: word counts log-normal around
    ``median_words`` (sigma 0.8), at most ``max_words``, so rows are shorter than the sequence and a
    micro-batch of them is padded (the Trainer) or packed (zerotui's ``packing: true``)."""
    rng = random.Random(seed)
    vocab = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud".split()
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(rows):
            n = max(8, min(max_words, int(rng.lognormvariate(0, 0.8) * median_words)))
            fh.write(json.dumps({"text": " ".join(rng.choice(vocab) for _ in range(n))}) + "\n")
    return path
