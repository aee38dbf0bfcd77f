"""Right padding without an attention mask (core/data/tokenise.py, collate's ``causal``): for the Llama
family the loss, every gradient and the real tokens' logits are those of the masked batch, and the batch
carries its token count instead of the mask."""
from __future__ import annotations

import pytest
import torch

from zerotui.core.data.tokenise import IGNORE, TOKEN_COUNT, collate


def _rows(lengths: list[int], vocab: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in lengths:
        ids = torch.randint(3, vocab, (n,), generator=g)
        labels = ids.clone()
        labels[: n // 3] = IGNORE  # a prompt: no targets
        out.append((ids, labels))
    return out


def _model(model_type: str):
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(model_type, vocab_size=97, hidden_size=32, intermediate_size=64,
                               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                               max_position_embeddings=64, attn_implementation="sdpa", pad_token_id=0)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)


def _loss_and_grads(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    model.zero_grad()
    inputs = {k: v for k, v in batch.items() if k != TOKEN_COUNT}
    out = model(**inputs)
    out.loss.backward()
    return out.loss.detach(), out.logits.detach(), [p.grad.clone() for p in model.parameters()]


def test_an_unmasked_batch_carries_its_token_count_and_the_same_tokens():
    rows = _rows([5, 11, 8], vocab=97)
    masked = collate(rows, pad_id=0, seq_len=64)
    causal = collate(rows, pad_id=0, seq_len=64, causal=True)
    assert "attention_mask" not in causal
    assert causal[TOKEN_COUNT] == int(masked["attention_mask"].sum()) == 24
    assert torch.equal(causal["input_ids"], masked["input_ids"])
    assert torch.equal(causal["labels"], masked["labels"])
    # the pad positions train nothing: their labels are IGNORE
    assert bool((causal["labels"][masked["attention_mask"] == 0] == IGNORE).all())


@pytest.mark.parametrize("model_type", ["llama", "qwen2"])
def test_padding_without_a_mask_trains_exactly_as_the_masked_batch(model_type):
    model = _model(model_type)
    rows = _rows([7, 16, 3, 12], vocab=97, seed=1)
    masked = collate(rows, pad_id=0, seq_len=64)
    causal = collate(rows, pad_id=0, seq_len=64, causal=True)
    assert masked["attention_mask"].eq(0).any()  # the test needs padding to mean anything
    loss_m, logits_m, grads_m = _loss_and_grads(model, masked)
    loss_c, logits_c, grads_c = _loss_and_grads(model, causal)
    torch.testing.assert_close(loss_c, loss_m, rtol=1e-5, atol=1e-6)
    real = masked["attention_mask"].bool()
    torch.testing.assert_close(logits_c[real], logits_m[real], rtol=1e-5, atol=1e-5)
    for gc, gm in zip(grads_c, grads_m):
        torch.testing.assert_close(gc, gm, rtol=1e-4, atol=1e-6)


def test_left_padding_would_not_be_equivalent():
    """Why collate pads on the right only: a pad token before a row's tokens is seen by all of them
    (the guard that makes the equivalence above a property of the layout, not of the model)."""
    model = _model("llama")
    ids = torch.randint(3, 97, (1, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        alone = model(input_ids=ids).logits
        left = model(input_ids=torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], 1)).logits[:, 3:]
    assert not torch.allclose(alone, left, atol=1e-4)
