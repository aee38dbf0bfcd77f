"""Every export is loaded back before it is handed over: the folder goes through the loader a user would
use, and its logits on a fixed probe are compared with the model that was written.

The probe is one short sequence (8 tokens), so checking a 70B model costs one forward pass of 8 tokens
on the CPU, not a second copy of the model: the reference logits are taken before the written model
is dropped, and the folder is loaded only after that.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from zerotui.core.errors import RunError

PROBE_TOKENS = 8
#: Allowed logit difference, relative to the largest logit. The same weights reloaded compute through
#: another attention kernel (sdpa vs eager) whose 16-bit rounding differs by an ulp or two (bf16's ulp at
#: 1.0 is 0.0078: seen on the tiny model); fp32 agrees to far less.
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 3e-2}


def probe_ids(vocab_size: int) -> Any:
    import torch

    g = torch.Generator().manual_seed(1234)
    return torch.randint(3, max(4, vocab_size), (1, PROBE_TOKENS), generator=g)


def probe_logits(model: Any) -> Any:
    """fp32 logits of ``model`` on the probe (on the model's device)."""
    import torch

    ids = probe_ids(model.config.vocab_size).to(model.device)
    with torch.no_grad():
        return model(input_ids=ids).logits.float().cpu()


def compare(got: Any, want: Any | None, tolerance: float) -> dict:
    """{"max_abs_diff", "tolerance", "match"}: ``tolerance`` is relative to the reference's largest logit."""
    import torch

    if not torch.isfinite(got).all():
        return {"match": False, "reason": "non-finite logits"}
    if want is None:
        return {"match": True, "reason": "loaded; no in-memory model to compare with (logits finite)"}
    diff = float((got - want).abs().max())
    scale = float(want.abs().max()) or 1.0
    return {"max_abs_diff": diff, "tolerance": tolerance * scale, "match": diff <= tolerance * scale}


def load_folder(folder: Path, dtype: Any, **kwargs: Any) -> Any:
    """``from_pretrained(folder)``, refusing a folder that misses or has extra weights."""
    from transformers import AutoModelForCausalLM

    model, info = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype, output_loading_info=True,
                                                       **kwargs)
    bad = {k: v for k, v in info.items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
    if bad:
        kind, names = next(iter(bad.items()))
        raise RunError(f"the written model in {folder} does not load whole: {kind.replace('_', ' ')} "
                       f"{sorted(names)[:3]}; nothing was kept", "report this as a zerotui bug")
    return model.eval()


def check(what: str, verdict: dict) -> dict:
    if not verdict.get("match"):
        raise RunError(f"the {what} export loads but does not compute what the merged model computes "
                       f"({verdict}); nothing was kept", "report this as a zerotui bug, or try --dtype fp32")
    return verdict
