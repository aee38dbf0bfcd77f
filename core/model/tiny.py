"""The built-in tiny model: a small Llama-family config and the tokenizer zerotui ships (no download).

It exists so that a demo, the CI tests and a first try on a laptop exercise the same code path as a
real fine-tune: a real ``LlamaForCausalLM`` (RMSNorm, rotary embeddings, grouped-query attention,
SwiGLU MLP), a real fast tokenizer with a chat template, and the shipped sample data.

Size: about 1.0M weights. On the 2-core CI machine the ``tiny-cpu-demo`` shape (ZeRO-2, 60 steps)
trains in seconds once DeepSpeed has started; see ``benchmarks/throughput/README.md`` for the numbers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from zerotui.core.paths import TINY_TOKENIZER_FILE as TOKENIZER_FILE

PAD, BOS, EOS = "<|pad|>", "<|bos|>", "<|eos|>"

#: One turn is ``<|role|>\ncontent<|eos|>\n``; the answer the model learns is everything after
#: ``<|assistant|>\n`` up to and including its ``<|eos|>``. Prefix-stable: rendering the first k
#: messages gives a prefix of rendering all of them, which is what prompt masking relies on.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + eos_token + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)

#: The model's shape. Small enough that a 60-step demo is quick on 2 CPU cores, big enough (4 layers,
#: GQA with 2 KV heads, untied head) that every path a real Llama takes is exercised: stage-3
#: partitioning of several weight shapes, LoRA on q/k/v/o, activation checkpointing per layer.
TINY_SHAPE: dict[str, Any] = dict(
    vocab_size=1024,
    hidden_size=128,
    intermediate_size=352,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=1024,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)


def tiny_config(attention: str = "sdpa"):
    """The tiny model's ``LlamaConfig`` (``use_cache`` off: training never reads the KV cache)."""
    from transformers import LlamaConfig

    cfg = LlamaConfig(**TINY_SHAPE, use_cache=False)
    cfg._attn_implementation = attention
    return cfg


def tiny_tokenizer():
    """The shipped tokenizer as a ``PreTrainedTokenizerFast`` with its chat template."""
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(TOKENIZER_FILE),
        bos_token=BOS, eos_token=EOS, pad_token=PAD,
        model_max_length=TINY_SHAPE["max_position_embeddings"],
        padding_side="right",
        chat_template=CHAT_TEMPLATE,
    )
    tok.name_or_path = "zerotui-tiny"
    return tok


def tiny_model(seed: int = 42, attention: str = "sdpa"):
    """A freshly initialised tiny ``LlamaForCausalLM`` (fp32; the engine casts it as the plan says).

    The weights depend only on ``seed``, so every rank (and a resumed run) builds the same model.
    """
    import torch
    from transformers import LlamaForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return LlamaForCausalLM(tiny_config(attention))


def param_count() -> int:
    """Exact number of weights of the tiny model (built on the meta device: no memory, no time)."""
    import torch
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(tiny_config())
    return sum(p.numel() for p in model.parameters())


def materialise(seed: int = 42) -> Path:
    """A model folder (config, fp32 weights, tokenizer) holding the tiny model initialised from ``seed``.

    Training loads the tiny model from here through ``from_pretrained``, exactly as it loads a real
    model: stage 3 then partitions it with ``zero.Init`` on the same code path, and ``zerotui merge``
    can rebuild the frozen base of a LoRA run bit for bit. Written once per seed into the cache
    (atomically: a temporary folder renamed into place), reused afterwards.
    """
    import hashlib
    import json
    import os
    import shutil
    import tempfile

    from zerotui.core.paths import cache_root

    shape = hashlib.sha256(json.dumps(TINY_SHAPE, sort_keys=True).encode()
                           + TOKENIZER_FILE.read_bytes()).hexdigest()[:12]
    folder = cache_root() / "tiny" / f"seed{seed}-{shape}"
    if (folder / "model.safetensors").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=folder.parent))
    try:
        # Written by hand, not with save_pretrained: under torch.distributed that writes only on rank 0,
        # and every rank may get here first (each then renames a complete folder or drops its copy).
        from safetensors.torch import save_file

        model = tiny_model(seed)
        model.config.to_json_file(str(tmp / "config.json"))
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"),
                  metadata={"format": "pt"})
        tiny_tokenizer().save_pretrained(str(tmp))
        if not all((tmp / f).exists() for f in ("config.json", "model.safetensors", "tokenizer.json")):
            raise OSError(f"the tiny model could not be written to {tmp}")
        try:
            os.rename(tmp, folder)
        except OSError:  # another process won the race: theirs is identical
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder
