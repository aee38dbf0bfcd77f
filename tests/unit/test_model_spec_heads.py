"""A model config whose attention heads do not divide is refused where zerotui reads it, naming the fields
and what would work: 32 query heads over 7 key/value heads was planned as a 614M model, and transformers
builds it without a word (the first forward fails, or heads are silently narrower)."""
from __future__ import annotations

import json
import sys

import pytest
from places import REPO

from zerotui.core.errors import ModelError
from zerotui.core.model.config_file import check_shape, read_config_file

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
         "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8,
         "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": 4096}
HINT = "give the config.json that came with the model"


def _refusal(tmp_path, **changes) -> ModelError:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, **changes}))
    with pytest.raises(ModelError) as err:
        read_config_file(path)
    return err.value


def test_key_value_heads_that_do_not_divide_the_heads_are_refused(tmp_path):
    err = _refusal(tmp_path, num_key_value_heads=7)
    assert err.message == (f"model config {tmp_path / 'config.json'}: num_attention_heads (32) is not a multiple "
                           "of num_key_value_heads (7): each key/value head must serve the same number of query "
                           "heads")
    assert err.hint == f"num_key_value_heads must divide 32, e.g. 4 or 8; {HINT}"
    assert err.field == "model"
    assert "num_key_value_heads must divide 32, e.g. 32;" in _refusal(tmp_path, num_key_value_heads=64).hint


def test_a_hidden_size_the_heads_do_not_divide_is_refused_without_head_dim(tmp_path):
    err = _refusal(tmp_path, hidden_size=4100)
    assert err.message.endswith("hidden_size (4,100) is not a multiple of num_attention_heads (32), and no "
                                "head_dim says how wide a head is")
    assert err.hint == f"make hidden_size a multiple of 32 such as 4,096 or 4,128, or give head_dim; {HINT}"
    gpt2 = {"model_type": "gpt2", "n_embd": 770, "n_head": 12, "n_layer": 2, "vocab_size": 100}
    with pytest.raises(ModelError, match=r"n_embd \(770\) is not a multiple of n_head \(12\)"):
        check_shape(gpt2, "gpt2 config")
    # A head width given by the config itself: the hidden size need not be heads x width (Gemma, ChatGLM).
    check_shape({**LLAMA, "hidden_size": 3072, "num_attention_heads": 14, "num_key_value_heads": 7,
                 "head_dim": 256}, "gemma-like")
    check_shape({"model_type": "chatglm", "hidden_size": 4100, "num_attention_heads": 32, "kv_channels": 128},
                "chatglm-like")


@pytest.mark.parametrize("field, value", [("num_attention_heads", 0), ("num_key_value_heads", -4),
                                          ("hidden_size", 0)])
def test_counts_below_one_are_refused(tmp_path, field, value):
    err = _refusal(tmp_path, **{field: value})
    assert f"field '{field}' must be a whole number from 1 to" in err.message and f"(got {value})" in err.message


def test_the_cli_says_so_in_one_line(zerotui_cli, tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({**LLAMA, "num_key_value_heads": 7}))
    for argv in (["--model", "m"], ["--model", "x", "--model-config", "m/config.json"]):
        r = zerotui_cli("estimate", "--gpu-mem", "80GB", "--ram", "200GB", *argv)
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.startswith("zerotui: model config ") and r.stderr.count("\n") == 1
        assert "num_attention_heads (32) is not a multiple of num_key_value_heads (7)" in r.stderr
        assert "e.g. 4 or 8" in r.stderr and "Traceback" not in r.stderr


def test_a_hub_config_and_a_config_loaded_to_train_are_checked_too(tmp_path, monkeypatch):
    """A hub id's config never passes read_config_file: it is checked where it is used."""
    from zerotui.core.model import spec
    from zerotui.core.model.load import load_config
    from zerotui.core.plan.schema import Plan

    monkeypatch.setattr(spec, "_hub_config", lambda name, trust: {**LLAMA, "num_key_value_heads": 7})
    with pytest.raises(ModelError, match=r"^model config of hub org/odd: num_attention_heads \(32\) is not"):
        spec._resolve("org/odd", None, False)
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**LLAMA, "num_key_value_heads": 7}))
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelError, match=r"num_attention_heads \(32\) is not a multiple of num_key_value_heads"):
        load_config(Plan(model=str(folder)))


def test_every_shipped_and_benchmarked_shape_passes():
    """The tiny model, the planning table and every shape the benchmarks train divide as they must."""
    from zerotui.core.model.spec import _TABLE, table_config
    from zerotui.core.model.tiny import TINY_SHAPE

    sys.path.insert(0, str(REPO))
    from benchmarks.seed_scenarios.shapes import SHAPES as SEED
    from benchmarks.throughput.shapes import SHAPES as THROUGHPUT

    check_shape(dict(TINY_SHAPE), "tiny")
    for name in _TABLE:
        check_shape(table_config(name), name)
    for name, shape in {**SEED, **THROUGHPUT}.items():
        check_shape(dict(shape), name)
    assert len(SEED) >= 10 and len(_TABLE) >= 17
