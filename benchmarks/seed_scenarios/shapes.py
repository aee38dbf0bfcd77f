"""The model shapes the seed scenarios train: published architectures' config.json fields (random
weights: a shape's memory and speed do not depend on them). ``models.py`` builds a folder of one."""
from __future__ import annotations

from typing import Any

from benchmarks.throughput.shapes import SHAPES as _THROUGHPUT


SHAPES: dict[str, dict[str, Any]] = {
    # Llama-2's published architectures (config.json of meta-llama/Llama-2-{7,13}b-hf).
    "7b": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
               rms_norm_eps=1e-5, tie_word_embeddings=False),
    "13b": dict(vocab_size=32000, hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                num_attention_heads=40, num_key_value_heads=40, max_position_embeddings=4096,
                rms_norm_eps=1e-5, tie_word_embeddings=False),
    # Llama-3.2-3B's architecture (its config.json): tied 128,256-word embeddings, grouped-query attention.
    "3b": dict(vocab_size=128256, hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
               num_attention_heads=24, num_key_value_heads=8, max_position_embeddings=131072,
               rms_norm_eps=1e-5, tie_word_embeddings=True, rope_theta=500000.0),
    # TinyLlama-1.1B's architecture, the 1.1B full fine-tune of benchmarks/speed and benchmarks/throughput.
    "1b": dict(_THROUGHPUT["1.1b"]),
    # Qwen2.5-1.5B's architecture (its config.json): no Llama shape has its tied 151,936-word embeddings
    # or its biased q/k/v projections (held out of the estimator's fit, 2026-12-03, fifth session).
    "q1.5b": dict(model_type="qwen2", vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                  num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                  max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True),
    # The same with an untied head: whether the tied embedding, whose two gradients meet at the end of
    # each backward, is what q1.5b-full-fit held beyond the estimate (2026-12-03, sixth session).
    "q1.5bu": dict(model_type="qwen2", vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                   num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                   max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=False),
    # Llama-3.2-1B's architecture (its config.json): the estimator sweeps' llama-1b-128k shape, whose
    # 128,256-word logits dominate (2026-12-04, ninth session: the sweeps' over-estimated plans again,
    # through zerotui's worker).
    "1b128k": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                   num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                   rms_norm_eps=1e-5, tie_word_embeddings=True, rope_theta=500000.0),
    # The estimator sweeps' llama-2b-49k (GQA 20/4, 49k vocabulary) and, below the table, llama-7b-l8: two of
    # their rows still over the band, through zerotui's worker (2026-12-06, twenty-seventh session).
    "2b-49k": dict(vocab_size=49152, hidden_size=2560, intermediate_size=6912, num_hidden_layers=24,
                   num_attention_heads=20, num_key_value_heads=4, max_position_embeddings=4096,
                   rms_norm_eps=1e-5, tie_word_embeddings=False),
    # The estimator sweeps' llama-0.1b: big enough that every matrix passes DeepSpeed's 1 MiB NVMe swap
    # threshold, small enough for this harness's CPU dry run (NVMe swap sizes, 2026-12-05).
    "0.1b": dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                 num_attention_heads=12, num_key_value_heads=12, max_position_embeddings=2048,
                 rms_norm_eps=1e-5, tie_word_embeddings=False),
    # zerotui's built-in tiny model's shape: the harness's CPU dry run.
    "tiny": dict(_THROUGHPUT["tiny"]),
}
# Llama-2-7B's width with 8 of its 32 layers (the sweeps' llama-7b-l8)
SHAPES["7b-l8"] = {**SHAPES["7b"], "num_hidden_layers": 8}
