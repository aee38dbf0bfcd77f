"""Activation memory of a Hugging Face decoder (Llama / Mistral / Qwen2 layout), per token.

Counted the way autograd keeps tensors for backward, op by op, in a decoder layer:

    RMSNorm: x.to(fp32) is kept (4h: pow and the product need it) and, when the norm's weight trains,
             the normalised 16-bit value (p·h) for the weight's gradient.
    q/k/v/o, gate/up/down: a trainable Linear keeps its input (p·in); a frozen one keeps nothing.
    rotary:  q·cos + rotate(q)·sin keeps only cos/sin (shared, negligible).
    SDPA (flash / memory-efficient): q, k, v, the output (p·(2h + 2h_kv)) and the fp32 logsumexp (4·heads).
    eager:   q, repeated k and v, the fp32 softmax (4·heads·s), its 16-bit copy (p·heads·s) and
             the re-laid-out output (4·p·h in all).
    SwiGLU:  silu keeps gate (p·I); the product keeps silu(gate) and up (2p·I).
    LoRA:    per adapted Linear, dropout keeps its mask (1 byte per element on CUDA, where the fused
             kernel keeps a bool mask; p bytes on the CPU) and its output (p·in) for lora_A, and
             lora_B keeps lora_A's output (p·r); with dropout 0 lora_A keeps the (shared) input itself.
    checkpointing (one checkpoint per decoder layer, non-reentrant): only the layer input (p·h).
    an explicit mask (``masked``: packed batches with SDPA or eager attention, whose block-diagonal mask
             transformers materialises; zerotui's unpacked Llama-family batches have none, see
             core/data/tokenise.py's collate): the mask itself, one for the whole model (s bytes per
             token as SDPA's bool, p·s for eager's additive one), and SDPA then gets keys and values
             repeated to every head (transformers' repeat_kv: grouped-query attention runs natively only
             without a mask), so a layer keeps p·2h of them instead of p·2h_kv (measured: 0.25 GiB of
             mask and 0.25 GiB of repeated keys and values at 4 x 8,192 tokens on Llama-3.2-1B's shape,
             benchmarks/results/memsnap-1b128k-lora-s8192-2026-12-04.txt).

For a full fine-tune in 16 bits this is s·b·(20h + 4h_kv + 8I + 4·heads) bytes per layer, plus 8h per
token after the last layer (final norm and the head's input). benchmarks/results/estimator-*.json
checks it on an H200 (full, LoRA, checkpointing, eager, fp32, GQA and MHA shapes): these terms match
the measured saved memory to within 1%.

Logits: the loss (transformers ForCausalLMLoss) upcasts the logits (b·s·V) to fp32 and takes
log_softmax; forward peaks at p + 4 + 4 bytes per logit (16-bit logits, fp32 copy, log-probabilities;
p + 4 in fp32, where the upcast is a no-op), keeps 4 (log-probabilities) after the loss, and backward
adds two fp32 gradients (8) on top: measured exactly on every row of the H200 sweep.

Fused linear cross-entropy (Liger, ``core/model/kernels.py``) never holds those logits: it walks the
tokens in chunks of ``min(BT, 2^ceil(log2(BT / ceil(V/h))))`` (a chunk's logits are about the size of
the head's input), computing the loss and both gradients during forward, and keeps the gradient of the
head's input (p·h per token) and, when the head trains, of its weight (p·V·h) for backward
(liger_kernel/ops/fused_linear_cross_entropy.py).
"""
from __future__ import annotations

from dataclasses import dataclass

ATTN_IN = ("q_proj", "k_proj", "v_proj")
MLP_IN = ("gate_proj", "up_proj")


@dataclass(frozen=True)
class LoraShape:
    """Which modules carry adapters (names), rank and dropout: all activation memory needs."""

    targets: frozenset[str]
    r: int
    dropout: float
    mask_bytes: int = 1     # dropout mask per element: 1 on CUDA (bool), the input's size on the CPU


def layer_bytes_per_token(spec, p: int, attention: str, seq_len: int, lora: LoraShape | None,
                          first_layer_input_frozen: bool = False, frozen_keeps_input: bool = False,
                          liger: bool = False, masked: bool = False) -> float:
    """Bytes kept for backward by one decoder layer, per token, without checkpointing.

    ``frozen_keeps_input``: ZeRO-3 replaces torch.nn.functional.linear with its own autograd function
    (deepspeed/runtime/zero/linear.py, LinearFunctionForZeroStage3; ``memory_efficient_linear`` is on
    by default and the patch persists for the process), which keeps every Linear's input, frozen or
    not: LoRA under stage 3 keeps the inputs of its frozen base layers too (measured: +p·(2h + I))."""
    h, hkv, inter, heads = spec.hidden_size, spec.kv_size, spec.intermediate_size, spec.num_heads
    full = lora is None
    norm = (p * h + 4) if liger else 4 * h + (p * h if full else 0)
    norm_first = 0.0 if first_layer_input_frozen else norm  # LoRA: nothing upstream needs a gradient
    if attention == "eager":
        attn = 4 * p * h + (4 + (p if p < 4 else 0)) * heads * seq_len
    else:  # sdpa / flash: q, k, v, out + fp32 logsumexp; with a mask k and v repeated to every head
        attn = p * (2 * h + 2 * (h if masked else hkv)) + 4 * heads
    if full:
        attn_in = p * h                       # q/k/v share their input
        mlp = p * h + (3 if liger else 4) * p * inter  # gate/up input, silu(gate), gate, up, down's input
        return norm_first + norm + attn_in + attn + mlp
    # LoRA: frozen base weights keep nothing of their own (unless ZeRO-3's linear keeps their input);
    # adapters keep what lora_A and lora_B need.
    t = lora.targets
    kept = p * (2 * h + inter) if frozen_keeps_input else 0.0   # q/k/v input, gate/up input, down input
    extra = 0.0
    for names, width, kept_already in ((ATTN_IN, h, frozen_keeps_input), (MLP_IN, h, frozen_keeps_input),
                                       (("down_proj",), inter, frozen_keeps_input),
                                       (("o_proj",), h, True)):   # SDPA keeps o_proj's input anyway
        hit = [n for n in names if n in t]
        if not hit:
            continue
        if lora.dropout > 0:
            masks = 0 if (first_layer_input_frozen and names is ATTN_IN) else len(hit) * width * lora.mask_bytes
            extra += masks + len(hit) * (p * width + p * lora.r)
        else:
            extra += (0 if kept_already else p * width) + len(hit) * p * lora.r
    mlp = (2 if liger else 3) * p * inter     # silu keeps gate; the product keeps silu(gate) and up
    return norm_first + norm + attn + mlp + kept + extra


def mask_bytes_per_token(p: int, attention: str, seq_len: int, masked: bool) -> float:
    """The explicit attention mask, (micro-batch, 1, s, s): s bytes a token (SDPA's bool), p·s (eager's)."""
    return 0.0 if not masked else float(seq_len) * (p if attention == "eager" else 1)


def model_bytes_per_token(spec, p: int, attention: str, seq_len: int, lora: LoraShape | None,
                          grad_ckpt: bool, frozen_keeps_input: bool = False, liger: bool = False,
                          fused_ce: bool = False, masked: bool = False) -> float:
    """Saved activation bytes per token for the whole decoder stack and the final norm / head input
    (``fused_ce``: the head's input is not kept, fused_logits_bytes counts its gradient instead), with
    the explicit attention mask where there is one (``masked``)."""
    h, layers = spec.hidden_size, spec.num_layers
    mask = mask_bytes_per_token(p, attention, seq_len, masked)
    head_input = 0 if fused_ce else p * h
    if liger:
        final = p * h + 4 + (head_input if lora is None or frozen_keeps_input else 0)
    elif lora is None:
        final = 4 * h + p * h + head_input    # final norm (fp32 input + normalised) and the head's input
    else:
        final = 4 * h + (head_input if frozen_keeps_input else 0)
    if grad_ckpt:
        return layers * p * h + final + mask
    per = layer_bytes_per_token(spec, p, attention, seq_len, lora, frozen_keeps_input=frozen_keeps_input,
                                liger=liger, masked=masked)
    if lora is not None and layers:
        first = layer_bytes_per_token(spec, p, attention, seq_len, lora, first_layer_input_frozen=True,
                                      frozen_keeps_input=frozen_keeps_input, liger=liger, masked=masked)
        return first + (layers - 1) * per + final + mask
    return layers * per + final + mask


def recompute_bytes_per_token(spec, p: int, attention: str, seq_len: int, lora: LoraShape | None,
                              frozen_keeps_input: bool = False, liger: bool = False, masked: bool = False) -> float:
    """With checkpointing, backward rebuilds one layer's activations and its gradients at a time:
    the layer's saved tensors plus the widest gradients in flight (the MLP's and two p·h). The MLP's are
    3p·I with PyTorch's SwiGLU (the product's gradient, then silu's and up's); Liger's SwiGLU backward
    writes both input gradients into the saved inputs' storage (liger_kernel/ops/swiglu.py,
    ``_swiglu_backward_kernel`` stores into a_ptr and b_ptr), which leaves only the product's gradient,
    p·I. Measured on the four Liger rows whose peak is this moment (seed results d, e, ho-a): allocated
    estimated 0.5-0.7 GiB high with 3p·I, within 0.2 GiB with p·I."""
    mlp_grads = (1 if liger else 3) * p * spec.intermediate_size
    return (layer_bytes_per_token(spec, p, attention, seq_len, lora, frozen_keeps_input=frozen_keeps_input,
                                  liger=liger, masked=masked)
            + mlp_grads + 2 * p * spec.hidden_size)


def fused_logits_bytes(tokens: int, vocab: int, hidden: int, p: int, head_trains: bool) -> dict[str, float]:
    """``logits_bytes`` for fused linear cross-entropy (see the module docstring)."""
    if tokens <= 0:
        return {"kept": 0.0, "forward_peak": 0.0, "backward_peak": 0.0, "grad_logits": 0.0}
    inc = -(-vocab // max(1, hidden))
    chunk = min(tokens, 1 << max(0, (-(-tokens // inc) - 1).bit_length()))
    kept = p * float(tokens) * hidden + 4.0 * tokens + (p * float(vocab) * hidden if head_trains else 0.0)
    # A chunk's logits in the 16-bit type and their fp32 softmax in the kernel.
    return {"kept": kept, "forward_peak": kept + (p + 4.0) * chunk * vocab, "backward_peak": kept,
            "grad_logits": 0.0}


def logits_bytes(tokens: int, vocab: int, p: int) -> dict[str, float]:
    """Loss-related bytes for ``tokens`` tokens: kept after forward, forward peak, backward peak."""
    tv = float(tokens) * vocab
    fwd_extra = (p + 4) if p < 4 else 4
    return {"kept": 4 * tv, "forward_peak": 4 * tv + fwd_extra * tv, "backward_peak": 12 * tv,
            "grad_logits": p * tv}
