"""Packing without cross-document attention: packed sequences carry position ids that restart at every
document, from which transformers builds a block-diagonal causal mask (sdpa, eager) or, for flash, the
varlen boundaries the batch passes explicitly. The loss of a packed batch must be the loss of its
documents run one by one, and the loop must count its tokens without an attention_mask.
A tiny random Llama on the CPU, the shipped tiny tokenizer; no DeepSpeed."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from zerotui.core.data import prepare as data_mod
from zerotui.core.data.sampler import DataOrder
from zerotui.core.data.tokenise import (IGNORE, TOKEN_COUNT, TokenSet, collate, collate_packed, from_examples,
                                        pack)
from zerotui.core.model.tiny import tiny_model, tiny_tokenizer
from zerotui.core.plan.schema import Plan

ALPACA = [
    {"instruction": "Add the numbers.", "input": "2 and 3", "output": "2 + 3 = 5."},
    {"instruction": "Reverse the word.", "input": "stone", "output": "enots"},
    {"instruction": "What is 7 times 8?", "input": "", "output": "7 x 8 = 56."},
    {"instruction": "Spell it.", "input": "river", "output": "r-i-v-e-r"},
]
VOCAB = 97


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))


def _documents(lengths, seed=0):
    """Random documents; every other one has a two-token prompt that is not a target, the others are all
    targets (format text: label 0 is a target too, but unpacked nothing ever predicts it)."""
    g = torch.Generator().manual_seed(seed)
    docs = []
    for k, n in enumerate(lengths):
        ids = torch.randint(3, VOCAB, (n,), generator=g, dtype=torch.int32)
        labels = ids.clone()
        labels[:2 * (k % 2)] = IGNORE
        docs.append((ids, labels))
    return docs


def _llama(attn: str):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    # A large init makes attention far from uniform, so attending across documents visibly changes the loss.
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      initializer_range=0.3, use_cache=False, attn_implementation=attn)
    return LlamaForCausalLM(cfg).float().eval()


def _token_losses(model, batch) -> torch.Tensor:
    """Per-target-token losses (targets in order), from the logits."""
    inputs = {k: v for k, v in batch.items() if k not in ("labels", TOKEN_COUNT)}
    with torch.no_grad():
        logits = model(**inputs).logits.float()
    labels = batch["labels"][:, 1:]
    ce = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                           ignore_index=IGNORE, reduction="none")
    return ce[labels.reshape(-1) != IGNORE]


def _packed_batch(docs, seq_len, **kw):
    ts = pack(from_examples(docs), seq_len)
    return ts, collate_packed([(*ts.example(i), ts.positions(i)) for i in range(len(ts))], 0, 64, **kw)


def _one_by_one(model, docs) -> torch.Tensor:
    return torch.cat([_token_losses(model, collate([d], pad_id=0, seq_len=64)) for d in docs])


# -- the TokenSet and the collation --------------------------------------------------------------------

def test_pack_keeps_documents_apart_without_copying_tokens():
    docs = _documents([5, 9, 3, 12, 7, 4])
    plain = from_examples(docs)
    ts = pack(plain, 24)
    assert ts.offsets.tolist() == [0, 17, 40] and ts.doc_offsets.tolist() == [0, 5, 14, 17, 29, 36, 40]
    assert ts.ids is plain.ids and len(ts) == 2 and ts.documents() == 6
    assert ts.doc_lengths(1).tolist() == [12, 7, 4]
    assert ts.positions(0).tolist() == list(range(5)) + list(range(9)) + list(range(3))
    # The first label of every document is never a target (as unpacked, where nothing precedes it).
    assert (ts.labels[ts.doc_offsets[:-1]] == IGNORE).all()
    assert torch.equal(ts.labels[1:5], plain.labels[1:5]) and int(plain.labels[0]) != IGNORE
    # Subsets (the eval split) and the cache's dict keep the documents.
    sub = ts.subset([1])
    assert sub.doc_offsets.tolist() == [0, 12, 19, 23] and sub.positions(0).tolist() == ts.positions(1).tolist()
    back = TokenSet.from_dict(ts.to_dict())
    assert torch.equal(back.doc_offsets, ts.doc_offsets) and not TokenSet.from_dict(plain.to_dict()).packed
    assert pack(ts, 64).doc_offsets.tolist() == ts.doc_offsets.tolist()  # packing again keeps the documents


def test_packed_collation_has_no_attention_mask_and_pads_as_a_document_of_its_own():
    _, batch = _packed_batch(_documents([5, 9, 3, 12, 7, 4]), 24)
    assert "attention_mask" not in batch and batch[TOKEN_COUNT] == 40
    assert batch["input_ids"].shape == (2, 24)  # longest 23, rounded up to a multiple of 8
    assert batch["position_ids"][0].tolist() == list(range(5)) + list(range(9)) + list(range(3)) + list(range(7))
    assert (batch["labels"][0, 17:] == IGNORE).all() and (batch["labels"][1, 23:] == IGNORE).all()
    assert "cu_seq_lens_q" not in batch


# -- the loss: packed equals one by one -----------------------------------------------------------------

@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_packed_loss_equals_the_documents_run_one_by_one(attn):
    model = _llama(attn)
    docs = _documents([5, 9, 3, 12, 7, 4, 16, 2])
    _, batch = _packed_batch(docs, 24)
    assert batch["input_ids"].shape[0] > 1 and (batch["labels"] == IGNORE).any()
    alone = _one_by_one(model, docs)
    packed = _token_losses(model, batch)
    assert packed.shape == alone.shape
    torch.testing.assert_close(packed, alone, rtol=1e-5, atol=1e-5)
    assert float(packed.sum()) == pytest.approx(float(alone.sum()), rel=1e-5)
    # The model's own loss (mean over the targets) agrees with the sum.
    inputs = {k: v for k, v in batch.items() if k != TOKEN_COUNT}
    with torch.no_grad():
        mean = model(**inputs).loss
    assert float(mean) * packed.numel() == pytest.approx(float(alone.sum()), rel=1e-5)
    # What the padding holds changes nothing.
    repadded = dict(batch, input_ids=batch["input_ids"].clone())
    repadded["input_ids"][0, 17:] = 7  # row 0 holds 17 tokens of documents
    torch.testing.assert_close(_token_losses(model, repadded), alone, rtol=1e-5, atol=1e-5)
    # The old behaviour, without position ids (every token attends to the documents before it), differs.
    old = _token_losses(model, {k: v for k, v in batch.items() if k != "position_ids"})
    assert abs(float(old.sum()) - float(alone.sum())) > 1e-3 * float(alone.sum())


def test_flash_batches_carry_the_varlen_boundaries_transformers_would_infer():
    """flash-attention-2 reads packing from position ids only for one-row batches
    (modeling_flash_attention_utils._is_packed_sequence), so the batch passes cu_seq_lens itself."""
    from transformers.modeling_flash_attention_utils import prepare_fa_kwargs_from_position_ids

    _, batch = _packed_batch(_documents([5, 9, 3, 12, 7, 4]), 24, flash=True)
    (cu_q, _), (max_q, _) = prepare_fa_kwargs_from_position_ids(batch["position_ids"].reshape(1, -1))
    assert batch["cu_seq_lens_q"].dtype == torch.int32
    assert batch["cu_seq_lens_q"].tolist() == cu_q.tolist() == [0, 5, 14, 17, 24, 36, 43, 47, 48]
    assert batch["max_length_q"] == batch["max_length_k"] == int(max_q) == 12
    assert isinstance(batch["max_length_q"], int)  # no device sync to read it


def test_the_varlen_boundaries_reach_the_attention_and_give_the_documents_alone():
    """The kwargs path flash takes (``_flash_attention_forward`` with cu_seq_lens), with a plain-torch
    varlen attention registered in flash's place: the boundaries reach every layer through the model."""
    from transformers import AttentionInterface

    seen = []

    def varlen(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
        cu = kw["cu_seq_lens_q"].tolist()
        seen.append((attention_mask, kw["max_length_q"]))
        b, h, w, d = query.shape
        rep = h // key.shape[1]
        q = query.transpose(1, 2).reshape(b * w, h, d)
        k = key.repeat_interleave(rep, dim=1).transpose(1, 2).reshape(b * w, h, d)
        v = value.repeat_interleave(rep, dim=1).transpose(1, 2).reshape(b * w, h, d)
        out = torch.empty_like(q)
        for s, e in zip(cu[:-1], cu[1:]):
            out[s:e] = torch.nn.functional.scaled_dot_product_attention(
                q[s:e].transpose(0, 1), k[s:e].transpose(0, 1), v[s:e].transpose(0, 1), is_causal=True,
                scale=scaling).transpose(0, 1)
        return out.reshape(b, w, h, d), None

    AttentionInterface.register("zerotui_test_varlen", varlen)
    model = _llama("sdpa")
    model.set_attn_implementation("zerotui_test_varlen")
    docs = _documents([5, 9, 3, 12, 7, 4])
    _, batch = _packed_batch(docs, 24, flash=True)
    packed = _token_losses(model, batch)
    assert len(seen) == 2 and all(mask is None and n == 12 for mask, n in seen)
    model.set_attn_implementation("sdpa")
    torch.testing.assert_close(packed, _one_by_one(model, docs), rtol=1e-5, atol=1e-5)


# -- through prepare_data and the training loop ---------------------------------------------------------

def _write(tmp_path: Path, n: int = 40) -> Path:
    p = tmp_path / "a.jsonl"
    p.write_text("".join(json.dumps(ALPACA[i % 4]) + "\n" for i in range(n)), encoding="utf-8")
    return p


def test_prepare_data_packs_with_positions_restarting_at_each_document(tmp_path):
    tok = tiny_tokenizer()
    plan = Plan(data=str(_write(tmp_path)), packing=True, seq_len=128, eval_fraction=0.1)
    d = data_mod.prepare_data(plan, tok)
    plain = data_mod.prepare_data(plan.with_changes(packing=False), tok, use_cache=False)
    assert d.train.packed and d.eval.packed and len(d.train) < len(plain.train)
    assert d.train.documents() == len(plain.train) and d.eval.documents() == len(plain.eval)
    for ts in (d.train, d.eval):
        for i in range(len(ts)):
            ids, labels = ts.example(i)
            pos = ts.positions(i)
            # Every document of the tiny template starts with BOS: exactly there the positions restart.
            assert torch.equal(pos == 0, ids == tok.bos_token_id)
            assert (labels[pos == 0] == IGNORE).all()
    batch = d.batch(d.train, [0, 1])
    assert set(batch) == {"input_ids", "labels", "position_ids", TOKEN_COUNT}
    assert batch[TOKEN_COUNT] == int(d.train.lengths()[:2].sum())
    again = data_mod.prepare_data(plan, tok)  # the cache keeps the documents
    assert again.report.cache_hit and torch.equal(again.train.doc_offsets, d.train.doc_offsets)
    assert set(plain.batch(plain.train, [0, 1])) == {"input_ids", "labels", "attention_mask"}  # unchanged
    flash = data_mod.prepare_data(plan.with_changes(attention="flash"), tok)
    assert "cu_seq_lens_q" in flash.batch(flash.train, [0, 1])


class _Engine:
    """What the loop uses of a DeepSpeed engine, over a plain model and SGD; records the inputs it got."""

    def __init__(self, model) -> None:
        self.module, self.device, self.skipped_steps = model, torch.device("cpu"), 0
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        self.inputs: list[dict] = []

    def __call__(self, **kw):
        self.inputs.append(kw)
        return self.module(**kw)

    def backward(self, loss) -> None:
        loss.backward()

    def step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad()

    def train(self) -> None:
        self.module.train()

    def eval(self) -> None:
        self.module.eval()

    def get_global_grad_norm(self):
        return None


@pytest.mark.parametrize("packing", [True, False])
def test_a_packed_batch_trains_through_the_loop_and_counts_its_tokens(tmp_path, packing):
    from zerotui.core.train.loop import TrainLoop

    tok = tiny_tokenizer()
    plan = Plan(data=str(_write(tmp_path)), packing=packing, seq_len=128, eval_fraction=0.2, micro_batch=2,
                grad_accum=2, precision="fp32", log_interval=1)
    data = data_mod.prepare_data(plan, tok)
    model = tiny_model(seed=1)
    engine = _Engine(model)
    order = DataOrder(len(data.train), plan.micro_batch, 1, 0, plan.seed)
    emitted = []
    loop = TrainLoop(plan=plan, engine=engine, loaded=SimpleNamespace(
        params_matmul=10**6, params_trainable=10**6, num_layers=4, hidden_size=128, is_lora=False),
        data=data, order=order, total=2, rank=0, world=1, emit=lambda t, **f: emitted.append((t, f)),
        control=SimpleNamespace(), ckpt=SimpleNamespace(last_saved_step=None), paths=None)
    before = [p.detach().clone() for p in model.parameters()]
    replay = DataOrder(len(data.train), plan.micro_batch, 1, 0, plan.seed)
    expect = sum(int(data.train.lengths()[replay.next()].sum()) for _ in range(plan.grad_accum))
    loop._one_step()
    assert len(engine.inputs) == 2
    first = engine.inputs[0]
    assert TOKEN_COUNT not in first and ("position_ids" in first) == packing
    assert ("attention_mask" in first) == (not packing)
    assert loop.i_tokens == expect  # the non-padding tokens, with or without an attention_mask
    assert expect < sum(x["input_ids"].numel() for x in engine.inputs)  # the batches were padded
    assert torch.isfinite(loop.i_loss) and float(loop.i_count) == 2
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    loop._evaluate()
    ev = [f for t, f in emitted if t == "eval"]
    assert len(ev) == 1 and ev[0]["loss"] == ev[0]["loss"] and ev[0]["loss"] > 0  # finite
    assert TOKEN_COUNT not in engine.inputs[-1]


def test_packing_is_refused_where_transformers_cannot_keep_documents_apart(tmp_path, monkeypatch):
    from zerotui.core.errors import DataError

    monkeypatch.setattr(data_mod, "packing_supported", lambda: False)
    plan = Plan(data=str(_write(tmp_path)), packing=True, seq_len=128)
    with pytest.raises(DataError, match="transformers 4.54"):
        data_mod.prepare_data(plan, tiny_tokenizer(), use_cache=False)
    data_mod.prepare_data(plan.with_changes(packing=False), tiny_tokenizer(), use_cache=False)  # unpacked: fine
