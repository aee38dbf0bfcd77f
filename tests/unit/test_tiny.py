"""The built-in tiny model, its tokenizer and the sample data: shipped files that the committed scripts
rebuild exactly, a tokenizer that encodes anything and has a prefix-stable chat template, and a model
folder that is the same for the same seed."""
from __future__ import annotations

import json

import pytest
import torch

from zerotui.core.model import tiny
from zerotui.core.paths import SAMPLE_FILE
from zerotui.core.assets import make_sample_data, make_tokenizer


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(tmp_path / "cache"))


def test_shipped_sample_is_what_the_script_generates():
    shipped = [json.loads(line) for line in SAMPLE_FILE.read_text(encoding="utf-8").splitlines()]
    assert shipped == make_sample_data.rows()
    kinds = {r["instruction"].split()[0] for r in shipped}
    assert len(shipped) >= 1000 and len(kinds) > 10  # varied, not one template


def test_shipped_tokenizer_is_what_the_script_trains():
    built = json.loads(make_tokenizer.build().to_str())
    shipped = json.loads(tiny.TOKENIZER_FILE.read_text(encoding="utf-8"))
    assert built["model"]["vocab"] == shipped["model"]["vocab"]
    assert built["model"]["merges"] == shipped["model"]["merges"]


def test_tokenizer_encodes_anything_and_matches_the_model():
    tok = tiny.tiny_tokenizer()
    assert len(tok) == tiny.TINY_SHAPE["vocab_size"]
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    for text in ("hello world", "Grüße, 東京! 🙂", "tabs\tand\nnewlines"):
        ids = tok(text)["input_ids"]
        assert ids[0] == tok.bos_token_id and tok.unk_token_id not in ids
        assert tok.decode(ids, skip_special_tokens=True) == text  # byte-level: lossless
    digits = tok.convert_ids_to_tokens(tok("12345", add_special_tokens=False)["input_ids"])
    assert digits == ["1", "2", "3", "4", "5"]


def test_chat_template_is_prefix_stable():
    tok = tiny.tiny_tokenizer()
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "a2"}]
    full = tok.apply_chat_template(msgs, tokenize=False)
    for k in range(1, len(msgs)):
        assert full.startswith(tok.apply_chat_template(msgs[:k], tokenize=False))
        assert full.startswith(tok.apply_chat_template(msgs[:k], tokenize=False, add_generation_prompt=True)) \
            == (msgs[k]["role"] == "assistant")
    ids = tok(full, add_special_tokens=False)["input_ids"]
    assert ids.count(tok.convert_tokens_to_ids("<|assistant|>")) == 2 and ids[0] == tok.bos_token_id


def test_model_shape_and_size():
    assert 0.9e6 < tiny.param_count() < 1.2e6
    cfg = tiny.tiny_config()
    assert cfg.model_type == "llama" and cfg.num_key_value_heads < cfg.num_attention_heads and not cfg.use_cache


def test_materialised_folder_is_deterministic_per_seed_and_loads():
    from transformers import AutoModelForCausalLM

    a = tiny.materialise(7)
    assert tiny.materialise(7) == a  # reused, not rebuilt
    fresh = tiny.tiny_model(7).state_dict()
    loaded = AutoModelForCausalLM.from_pretrained(str(a)).state_dict()
    assert all(torch.equal(fresh[k], loaded[k]) for k in fresh)
    other = tiny.tiny_model(8).state_dict()
    assert not torch.equal(fresh["model.layers.0.mlp.up_proj.weight"], other["model.layers.0.mlp.up_proj.weight"])
    assert (a / "tokenizer.json").exists() and (a / "config.json").exists()
