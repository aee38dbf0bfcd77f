"""Fused GPU kernels (Liger's Triton kernels) for a Hugging Face model: whether they apply, and applying them.

``kernels: auto`` turns them on where they can work — a CUDA GPU, liger-kernel and Triton importable,
an architecture Liger patches — and off elsewhere with the reason; ``kernels: liger`` insists (a
machine that cannot use them is an error naming what is missing); ``none`` keeps transformers' own
modules. What is patched: RMSNorm, rotary embedding and the SwiGLU MLP, and the loss becomes Liger's
fused linear cross-entropy, which computes the head's matmul and the loss chunk by chunk and never
holds the full logits (b·s·V), except under ZeRO-3: there the head's weight is partitioned and
gathered only when the head module itself runs, and the fused loss reads the weight directly.

Planning (the estimator, ``fit``, the launch's checks) asks ``planned``, which never imports Triton or
liger-kernel: importing liger-kernel imports transformers' model modules, 15-20 s on a GPU machine,
which every ``zerotui train`` paid before its worker started. It looks the packages up without importing
them and decides by the architecture table below; the worker's ``require`` imports Liger, applies it and
has the last word.
"""
from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from typing import Any, Optional

from zerotui.core.errors import ModelError

#: Architectures (config.model_type) Liger 0.8 patches, for planning where liger-kernel is not
#: installed; where it is, its own table (``MODEL_TYPE_TO_APPLY_LIGER_FN``) is the authority.
KNOWN_ARCHS = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2",
                         "gemma3_text", "phi3", "granite", "olmo2", "glm4", "smollm3"})


@dataclass(frozen=True)
class KernelChoice:
    liger: bool         # Liger's kernels are applied
    fused_ce: bool      # the loss is fused linear cross-entropy (no full logits)
    reason: str         # one line: why on, or why off

    def describe(self) -> str:
        if not self.liger:
            return f"kernels: transformers' own ({self.reason})"
        loss = "fused linear cross-entropy" if self.fused_ce else "the usual loss (ZeRO-3 partitions the head)"
        return f"kernels: Liger (RMSNorm, RoPE, SwiGLU; {loss})"


@functools.lru_cache(maxsize=1)
def liger_status() -> tuple[bool, str, frozenset[str]]:
    """(importable, why not, architectures it patches). Cached: importing Triton takes a second or two."""
    try:
        import triton  # noqa: F401 - Liger's kernels are Triton programs
    except Exception as err:  # noqa: BLE001 - a broken Triton install raises more than ImportError
        return False, f"Triton is not importable ({type(err).__name__}); liger-kernel needs it", frozenset()
    try:
        from liger_kernel.transformers.monkey_patch import MODEL_TYPE_TO_APPLY_LIGER_FN
    except Exception as err:  # noqa: BLE001
        return False, f"liger-kernel is not installed or does not import ({type(err).__name__})", frozenset()
    return True, "", frozenset(MODEL_TYPE_TO_APPLY_LIGER_FN)


def choose(kernels: str, arch: str, stage: int, on_gpu: bool) -> KernelChoice:
    """What ``kernels`` means for this architecture, ZeRO stage and machine (never raises)."""
    if kernels == "none":
        return KernelChoice(False, False, "turned off in the plan")
    if not on_gpu:
        return KernelChoice(False, False, "no CUDA GPU: Liger's kernels run on NVIDIA/AMD GPUs only")
    ok, why, archs = liger_status()
    if not ok:
        return KernelChoice(False, False, why)
    if arch not in archs:
        return KernelChoice(False, False, f"Liger has no kernels for the {arch!r} architecture")
    return KernelChoice(True, stage != 3, "on")


def installed() -> tuple[bool, str]:
    """(Triton and liger-kernel are installed, why not), found without importing either."""
    for module, why in (("triton", "Triton is not installed; liger-kernel needs it"),
                        ("liger_kernel", "liger-kernel is not installed")):
        try:
            if importlib.util.find_spec(module) is None:
                return False, why
        except (ImportError, ValueError):  # a broken package: the worker's import names it
            return False, why
    return True, ""


def planned(kernels: str, arch: str, stage: int, on_gpu: bool) -> KernelChoice:
    """``choose`` for planning, without importing Liger (see the module docstring). On a machine without
    liger-kernel installed — planning for another — a known architecture on a GPU counts as covered: the
    worker checks again where the run starts."""
    if kernels == "none":
        return KernelChoice(False, False, "turned off in the plan")
    if not on_gpu:
        return KernelChoice(False, False, "no CUDA GPU: Liger's kernels run on NVIDIA/AMD GPUs only")
    if arch not in KNOWN_ARCHS:
        return KernelChoice(False, False, f"Liger has no kernels for the {arch!r} architecture")
    here, _ = installed()
    return KernelChoice(True, stage != 3, "on" if here else "on (liger-kernel is checked where the run starts)")


def require_planned(plan: Any, arch: str, on_gpu: bool) -> None:
    """The launch's check of ``kernels: liger`` (insisted on) without importing Liger: a machine that
    plainly cannot use it is refused before the model loads; the worker's ``require`` checks the rest."""
    if plan.kernels != "liger":
        return
    here, why = installed()
    reason = ("no CUDA GPU: Liger's kernels run on NVIDIA/AMD GPUs only" if not on_gpu else
              why if not here else
              f"Liger has no kernels for the {arch!r} architecture" if arch not in KNOWN_ARCHS else None)
    if reason is not None:
        raise _insisted(reason)


def require(plan: Any, arch: str, on_gpu: bool) -> KernelChoice:
    """The choice for a run that is about to train; ``kernels: liger`` that cannot apply is an error."""
    choice = choose(plan.kernels, arch, plan.stage, on_gpu)
    if plan.kernels == "liger" and not choice.liger:
        raise _insisted(choice.reason)
    return choice


def _insisted(reason: str) -> ModelError:
    return ModelError(f"kernels: liger cannot be used here: {reason}",
                      "use --kernels auto (on where they work) or --kernels none"
                      + ("; pip install liger-kernel" if "not installed" in reason else ""), field="kernels")


def apply(model: Any, choice: KernelChoice, note: Optional[Any] = None) -> None:
    """Patch ``model`` in place (before PEFT and DeepSpeed wrap it: they call the patched forwards)."""
    if not choice.liger:
        return
    from liger_kernel.transformers import _apply_liger_kernel_to_instance

    # The instance form patches this model's modules (their forward methods), not transformers' classes,
    # so nothing else in the process changes. Liger's own cross_entropy stays off: with the fused loss
    # it would be unused, and without it (ZeRO-3) it patches torch.nn.functional globally.
    _apply_liger_kernel_to_instance(model=model, rope=True, rms_norm=True, swiglu=True, cross_entropy=False,
                                    fused_linear_cross_entropy=choice.fused_ce)
    if note:
        note(choice.describe())
