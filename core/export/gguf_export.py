"""A merged Llama model as one GGUF file (llama.cpp's format) through the ``gguf`` package: tensor names
from gguf's own name map, the llama metadata keys, and the tokenizer (byte-level BPE as "gpt2", with
its merges and special tokens), in f32, f16 or bf16 — no quantisation (llama.cpp's ``llama-quantize``
does that from this file).

Written streaming from the staged safetensors folder: the tensor table comes from the shards' headers,
then each tensor is read, converted and appended on its own, so RAM holds one tensor at a time.

Layout differences from Hugging Face: llama.cpp applies rotary embeddings to interleaved pairs, HF to
the two halves of each head, so the rows of q_proj and k_proj are reordered per head (half i and half
i + d/2 become neighbours); transformers' GGUF loader undoes exactly that, which the verification
checks by comparing logits. 1-D tensors (norms) are written in f32, as llama.cpp expects.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from zerotui.core.errors import RunError

SUPPORTED = ("llama",)
FILE = "model.gguf"


def check_supported(arch: str) -> None:
    """Refuse, before any work, an architecture this writer has no tensor layout for."""
    if arch not in SUPPORTED:
        raise RunError(f"GGUF export supports the Llama architecture; this run's model is {arch!r}",
                       "use --format safetensors (or bnb-4bit), then llama.cpp's convert_hf_to_gguf.py")


def _types(dtype: str) -> tuple[Any, int]:
    import gguf

    q, ft = gguf.GGMLQuantizationType, gguf.LlamaFileType
    return {"fp32": (q.F32, ft.ALL_F32), "fp16": (q.F16, ft.MOSTLY_F16),
            "bf16": (q.BF16, ft.MOSTLY_BF16)}[dtype]


def _interleave_rope_rows(w: Any, heads: int) -> Any:
    rows = w.shape[0]
    half = rows // heads // 2
    return w.reshape(heads, 2, half, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


def _as_array(t: Any, qtype: Any) -> Any:
    import gguf
    import torch

    if t.dim() == 1 or qtype == gguf.GGMLQuantizationType.F32:
        return t.float().numpy(), gguf.GGMLQuantizationType.F32
    if qtype == gguf.GGMLQuantizationType.F16:
        return t.half().numpy(), qtype
    return t.to(torch.bfloat16).contiguous().view(torch.int16).numpy(), qtype  # raw bf16 bits


def _metadata(w: Any, config: Any, dtype: str, tokenizer_dir: Path) -> None:
    import gguf

    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    w.add_name("zerotui merge")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(heads)
    w.add_head_count_kv(config.num_key_value_heads or heads)
    w.add_rope_dimension_count(head_dim)
    rope = getattr(config, "rope_parameters", None) or {}
    w.add_rope_freq_base(float(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))))
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_vocab_size(config.vocab_size)
    w.add_file_type(_types(dtype)[1])
    _tokenizer(w, tokenizer_dir, config.vocab_size)
    gguf.SpecialVocab(tokenizer_dir, load_merges=True, n_vocab=config.vocab_size).add_to_gguf(w, quiet=True)


def _tokenizer(w: Any, folder: Path, vocab_size: int) -> None:
    import gguf
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    by_id = {i: t for t, i in tok.get_vocab().items()}
    special = set(tok.all_special_ids)
    tokens, types = [], []
    for i in range(vocab_size):
        tokens.append(by_id.get(i, f"[PAD{i}]"))
        kind = gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
        types.append(kind if i in by_id else gguf.TokenType.UNUSED)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)


def write_gguf(merged: Path, out: Path, config: Any, dtype: str) -> Path:
    """``out``/model.gguf from the safetensors folder ``merged``; returns its path."""
    import gguf
    import numpy as np
    from safetensors import safe_open
    from zerotui.core.export.shards import shard_files

    check_supported(config.model_type)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
    qtype = _types(dtype)[0]
    heads, kv = config.num_attention_heads, config.num_key_value_heads or config.num_attention_heads
    order: dict[Path, list[str]] = {}  # shard -> HF names, in the order the tensor table lists them
    writer = gguf.GGUFWriter(str(out / FILE), "llama")
    _metadata(writer, config, dtype, merged)
    for shard in shard_files(merged):
        with safe_open(str(shard), framework="pt") as fh:
            for name in fh.keys():  # noqa: SIM118 - a safetensors handle, not a dict
                target = names.get_name(name, try_suffixes=(".weight", ".bias"))
                if target is None:
                    raise RunError(f"the merged model has a tensor GGUF's llama layout has no place for: {name}",
                                   "use --format safetensors for this model")
                shape = fh.get_slice(name).get_shape()
                one_d = len(shape) == 1 or qtype == gguf.GGMLQuantizationType.F32
                size = 4 if one_d else 2
                n = 1
                for d in shape:
                    n *= d
                np_dtype = "float32" if one_d else ("float16" if qtype == gguf.GGMLQuantizationType.F16 else "int16")
                writer.add_tensor_info(target, shape, np.dtype(np_dtype), n * size,
                                       raw_dtype=None if np_dtype != "int16" else qtype)
                order.setdefault(shard, []).append(name)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for shard, members in order.items():
        with safe_open(str(shard), framework="pt") as fh:
            for name in members:
                t = fh.get_tensor(name)
                if name.endswith("q_proj.weight"):
                    t = _interleave_rope_rows(t, heads)
                elif name.endswith("k_proj.weight"):
                    t = _interleave_rope_rows(t, kv)
                writer.write_tensor_data(_as_array(t, qtype)[0])
    writer.close()
    return out / FILE


def read_back(path: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """{GGUF tensor name: (shape in numpy order, type name)} as ``gguf.GGUFReader`` reads the file."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    return {t.name: (tuple(int(d) for d in reversed(t.shape)), t.tensor_type.name) for t in reader.tensors}
