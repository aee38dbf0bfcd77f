"""Training FLOPs per token, for the ``tflops`` field of step events (achieved TFLOP/s per GPU).

Formula (Kaplan et al. 2020 for the dense part; the attention term as in PaLM, Chowdhery et al. 2022,
appendix B, and Megatron-LM's MFU accounting):

    forward  = 2·N + 4·L·h·s          (N: weights used in matrix multiplies, i.e. all but the input
                                       embedding lookup; L layers, h hidden size, s sequence width)
    backward = 2 × forward for full fine-tuning (activation + weight gradients);
               LoRA: 2·N for activation gradients of the frozen base + 2·N_trainable for the adapters
    recompute (activation checkpointing) = one more forward

so full training without checkpointing is the familiar 6·N + 12·L·h·s per token. These are *hardware*
FLOPs (recompute counted, since the GPU does that work); s is the padded width of the micro-batch,
as that is what the attention kernels compute over; tokens are the non-padding ones.
"""
from __future__ import annotations


def flops_per_token(n_matmul: int, n_trainable: int, layers: int, hidden: int, seq: int,
                    lora: bool, recompute: bool) -> float:
    attn = 4.0 * layers * hidden * seq
    forward = 2.0 * n_matmul + attn
    if lora:
        backward = 2.0 * n_matmul + 2.0 * n_trainable + 2.0 * attn
    else:
        backward = 2.0 * forward
    return forward + backward + (forward if recompute else 0.0)
