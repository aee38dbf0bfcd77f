"""`zerotui merge`: the output is a normal Hugging Face folder that ``from_pretrained`` loads and that
computes what the trained model computes, for a full ZeRO-3 run (shards consolidated from a checkpoint)
and a LoRA run (adapter merged into the base); bad requests fail with one clear line."""
from __future__ import annotations

import json

import pytest
import torch
from engine_runs import events, make_run, run_engine
from zerotui.core.errors import RunError
from zerotui.core.export.merge import merge_run


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _env(cache, monkeypatch):
    monkeypatch.setenv("ZEROTUI_CACHE_DIR", str(cache))  # merge rebuilds the tiny base from the same cache


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, cache):
    paths = make_run(tmp_path_factory.mktemp("full") / "run", stage=3, max_steps=10, save_interval=5)
    assert run_engine(paths, cache=cache)["state"] == "completed"
    return paths


@pytest.fixture(scope="module")
def lora_run(tmp_path_factory, cache):
    paths = make_run(tmp_path_factory.mktemp("lora") / "run", method="lora", lr=1e-2, max_steps=10,
                     save_interval=5, lora_targets=["q_proj", "v_proj", "down_proj"])
    assert run_engine(paths, cache=cache)["state"] == "completed"
    return paths


def logits(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(3, 1000, (2, 24), generator=g)
    with torch.no_grad():
        return model(input_ids=x).logits.float()


def load(folder, dtype=None):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype).eval()


def test_zero3_shards_consolidate_to_the_trained_model(tmp_path, full_run):
    out = merge_run(full_run, tmp_path / "merged", checkpoint="latest")
    merged, trained = load(out), load(full_run.final)  # final/: the engine's own 16-bit weights
    assert merged.dtype == torch.bfloat16  # the run's precision by default
    sm, st = merged.state_dict(), trained.state_dict()
    assert sm.keys() == st.keys() and all(torch.equal(sm[k], st[k]) for k in st)
    assert torch.equal(logits(merged), logits(trained))
    assert (out / "tokenizer.json").exists() and not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_an_older_checkpoint_in_fp32_differs_from_the_end(tmp_path, full_run):
    out = merge_run(full_run, tmp_path / "step5", checkpoint="step5", dtype="fp32")
    m = load(out)
    assert m.dtype == torch.float32
    assert not torch.allclose(logits(m), logits(load(full_run.final, torch.float32)), atol=1e-3)


def test_lora_merged_into_the_base_gives_the_adapted_logits(tmp_path, lora_run):
    from peft import PeftModel
    from zerotui.core.model.tiny import materialise

    out = merge_run(lora_run, tmp_path / "merged", dtype="fp32")
    merged = load(out)
    assert not any("lora" in k for k in merged.state_dict())  # a plain model, no PEFT needed to load
    adapted = PeftModel.from_pretrained(load(materialise(42), torch.float32), str(lora_run.final)).eval()
    base = load(materialise(42), torch.float32)
    torch.testing.assert_close(logits(merged), logits(adapted), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(logits(merged), logits(base), atol=1e-3)  # the adapter did change something

    from_ckpt = load(merge_run(lora_run, tmp_path / "from-ckpt", checkpoint="latest", dtype="fp32"))
    # fp32 master adapters vs the bf16 copies final/ holds: equal up to bf16 rounding of the adapters.
    torch.testing.assert_close(logits(from_ckpt), logits(merged), atol=2e-2, rtol=2e-2)


def test_merge_refuses_a_non_empty_folder_and_a_run_without_weights(tmp_path, full_run):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(RunError, match="not empty"):
        merge_run(full_run, busy)
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]

    empty = make_run(tmp_path / "never-saved")
    with pytest.raises(RunError) as err:
        merge_run(empty, tmp_path / "out")
    assert "no final/ model and no complete checkpoint" in err.value.message and "save-interval" in err.value.hint
    with pytest.raises(RunError, match="has no checkpoint 'step7'"):
        merge_run(full_run, tmp_path / "out", checkpoint="step7")
    assert not (tmp_path / "out").exists()


def test_merge_cli(tmp_path, full_run, zerotui_cli):
    r = zerotui_cli("merge", str(full_run.root), "-o", str(tmp_path / "m"), "--checkpoint", "5", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)  # stdout is only the JSON
    assert result["output"] == str(tmp_path / "m") and result["dtype"] == "bf16" and result["source"] == "step5"
    assert result["verification"]["match"] and result["room"]["ram_check"] == "ok"
    assert result["files"]["model.safetensors"] == (tmp_path / "m" / "model.safetensors").stat().st_size
    bad = zerotui_cli("merge", str(full_run.root), "-o", str(tmp_path / "b"), "--max-shard-size", "lots")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--max-shard-size" in bad.stderr
    again = zerotui_cli("merge", str(full_run.root), "-o", str(tmp_path / "m"))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "not empty" in again.stderr


@pytest.fixture(scope="module")
def qlora_run(tmp_path_factory, cache):
    paths = make_run(tmp_path_factory.mktemp("qlora") / "run", method="qlora", precision="fp32", lr=1e-2,
                     max_steps=12, log_interval=2, save_interval=6, lora_targets=["q_proj", "v_proj", "down_proj"])
    assert run_engine(paths, cache=cache)["state"] == "completed"
    return paths


def test_qlora_trains_a_4bit_base_and_merges_into_what_the_adapter_saw(tmp_path, qlora_run):
    """bitsandbytes trains 4-bit models on the CPU: the loss goes down, the base stays 4-bit, and the
    merged model (base quantised as in training, dequantised, adapter folded in) loads with
    from_pretrained and computes the adapter model's logits."""
    from engine_runs import losses
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    from zerotui.core.model.quantise import prepare_base, quantization_config
    from zerotui.core.model.tiny import materialise
    from zerotui.core.plan.schema import load_plan

    steps = losses(qlora_run)
    assert steps[12] < steps[2] - 0.1, steps
    logs = [e["message"] for e in events(qlora_run, "log")]
    assert any("QLoRA 4-bit" in m for m in logs), logs
    plan = load_plan(qlora_run.plan)
    base = AutoModelForCausalLM.from_pretrained(str(materialise(42)), dtype=torch.float32, device_map={"": "cpu"},
                                                quantization_config=quantization_config(plan, torch.float32))
    prepare_base(base)
    assert type(base.model.layers[0].self_attn.q_proj).__name__ == "Linear4bit"
    adapted = PeftModel.from_pretrained(base, str(qlora_run.final)).eval()
    out = merge_run(qlora_run, tmp_path / "merged")
    merged = load(out)
    assert merged.dtype == torch.float32 and not any("lora" in k for k in merged.state_dict())
    assert type(merged.model.layers[0].self_attn.q_proj).__name__ == "Linear"
    torch.testing.assert_close(logits(merged), logits(adapted), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(logits(merged), logits(load(materialise(42), torch.float32)), atol=1e-3)


def test_lora_merges_in_bf16_by_default_with_the_adapted_logits(tmp_path, lora_run):
    """A bf16 run merges in bf16 (every saved tensor bf16, no fp32 detour) into sharded files."""
    from peft import PeftModel
    from safetensors import safe_open
    from zerotui.core.export.merge import export_run
    from zerotui.core.model.tiny import materialise

    result = export_run(lora_run, tmp_path / "bf16", max_shard_size=300_000)
    shards = sorted(result.out.glob("model-*.safetensors"))
    assert len(shards) >= 2 and (result.out / "model.safetensors.index.json").exists()
    for shard in shards:
        with safe_open(str(shard), framework="pt") as fh:
            assert {str(fh.get_slice(k).get_dtype()) for k in fh.keys()} == {"BF16"}  # noqa: SIM118
    assert result.dtype == "bf16" and result.verification["match"]
    adapted = PeftModel.from_pretrained(load(materialise(42), torch.bfloat16), str(lora_run.final)).eval()
    merged = load(result.out)
    assert merged.dtype == torch.bfloat16
    torch.testing.assert_close(logits(merged), logits(adapted), atol=5e-2, rtol=5e-2)


def test_zero3_consolidates_lazily_into_shards_from_pretrained_loads(tmp_path, full_run):
    from zerotui.core.export.merge import export_run

    result = export_run(full_run, tmp_path / "sharded", checkpoint="latest", max_shard_size=400_000)
    index = json.loads((result.out / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) >= 2
    merged, trained = load(result.out), load(full_run.final)
    sm, st = merged.state_dict(), trained.state_dict()
    assert sm.keys() == st.keys() and all(torch.equal(sm[k], st[k]) for k in st)
    assert torch.equal(logits(merged), logits(trained))


def test_4bit_export_loads_back_as_4bit(tmp_path, lora_run):
    from zerotui.core.export.merge import export_run

    result = export_run(lora_run, tmp_path / "q4", fmt="bnb-4bit")
    check = result.verification["bnb-4bit"]
    assert check["match"] and check["linear4bit_layers"] > 0
    model = load(result.out, torch.bfloat16)
    assert type(model.model.layers[0].self_attn.q_proj).__name__ == "Linear4bit"
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # the staged 16-bit folder is gone


def test_gguf_export_reads_back_and_loads_in_transformers(tmp_path, lora_run):
    import gguf
    from transformers import AutoModelForCausalLM
    from zerotui.core.export.merge import export_run

    result = export_run(lora_run, tmp_path / "gguf", fmt="gguf", dtype="bf16")
    reader = gguf.GGUFReader(str(result.out / "model.gguf"))
    names = {t.name: t for t in reader.tensors}
    assert "token_embd.weight" in names and "blk.3.attn_q.weight" in names and "output.weight" in names
    assert names["blk.0.attn_q.weight"].tensor_type.name == "BF16"
    assert names["blk.0.attn_norm.weight"].tensor_type.name == "F32"
    assert bytes(reader.fields["general.architecture"].parts[-1]).decode() == "llama"
    back = AutoModelForCausalLM.from_pretrained(str(result.out), gguf_file="model.gguf", dtype=torch.bfloat16)
    merged = export_run(lora_run, tmp_path / "plain", dtype="bf16").out
    torch.testing.assert_close(logits(back.eval()), logits(load(merged)), atol=5e-2, rtol=5e-2)


def test_room_check_refuses_a_merge_bigger_than_ram_or_disk(tmp_path):
    """A 70B run: its bf16 merge needs ~140 GB of RAM, its fp32 one ~280 GB of disk — both refused
    before anything is read, with what is needed and what is there."""
    from zerotui.core.errors import HardwareError
    from zerotui.core.export.room import available_ram, free_disk

    run = make_run(tmp_path / "big", model="llama-3.1-70b", method="lora", precision="bf16")
    (run.final).mkdir(exist_ok=True)
    (run.final / "adapter_config.json").write_text("{}")  # never read: the check comes first
    assert available_ram() < 140e9 and free_disk(tmp_path) < 282e9, "this machine has room for a 70B merge"
    with pytest.raises(HardwareError) as err:
        merge_run(run, tmp_path / "out")
    assert "of RAM" in err.value.message and "--force" in err.value.hint
    with pytest.raises(HardwareError) as err:
        merge_run(run, tmp_path / "out", dtype="fp32", force=True)
    assert "of disk" in err.value.message and "-o" in err.value.hint
    assert not (tmp_path / "out").exists()


def test_gguf_refuses_an_architecture_it_has_no_layout_for(tmp_path):
    run = make_run(tmp_path / "qwen", model="qwen2.5-0.5b", method="lora")
    (run.final).mkdir(exist_ok=True)
    (run.final / "adapter_config.json").write_text("{}")
    with pytest.raises(RunError, match="GGUF export supports the Llama architecture; this run's model is 'qwen2'"):
        merge_run(run, tmp_path / "out", fmt="gguf")


def _copy_run(run, to):
    import shutil

    shutil.copytree(run.root, to, symlinks=True)
    from zerotui.core.run.folder import RunPaths

    return RunPaths(to)


@pytest.mark.parametrize("damage", ["truncated", "missing", "link", "rank", "not-lora"])
def test_a_damaged_final_adapter_is_named_and_the_checkpoint_merged_instead(tmp_path, lora_run, damage):
    """final/ edited, cut or replaced after the run: each reached PEFT or safetensors and came back as a
    traceback (a 'Repo id' error, a header error, a 512 GB allocation for a rank of 10^9). Now final/ is
    checked first, named in a note, and the newest complete checkpoint is merged; it gives what the
    checkpoint alone gives."""
    run = _copy_run(lora_run, tmp_path / "run")
    weights, config = run.final / "adapter_model.safetensors", run.final / "adapter_config.json"
    if damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:500])
    elif damage == "missing":
        weights.unlink()
    elif damage == "link":
        weights.unlink()
        weights.symlink_to("/dev/zero")
    else:
        cfg = json.loads(config.read_text())
        cfg.update(r=10**9) if damage == "rank" else cfg.pop("peft_type")
        config.write_text(json.dumps(cfg))
    notes: list[str] = []
    out = merge_run(run, tmp_path / "merged", dtype="fp32", notes=notes)
    said = {"truncated": "final/adapter_model.safetensors is damaged", "missing":
            "final/adapter_model.safetensors: no such file", "link": "final/adapter_model.safetensors: is a symlink",
            "rank": "final/adapter_config.json says rank 1000000000 where the run trained rank 16",
            "not-lora": "final/adapter_config.json names no LoRA adapter"}[damage]
    assert len(notes) == 1 and notes[0].startswith(said) and notes[0].endswith("merged the newest complete "
                                                                               "checkpoint instead"), notes
    from_ckpt = merge_run(lora_run, tmp_path / "ckpt", checkpoint="latest", dtype="fp32")
    torch.testing.assert_close(logits(load(out)), logits(load(from_ckpt)), atol=0, rtol=0)


def test_a_damaged_final_without_a_checkpoint_says_what_is_wrong(tmp_path, lora_run):
    import shutil

    run = _copy_run(lora_run, tmp_path / "run")
    shutil.rmtree(run.checkpoints)
    run.checkpoints.mkdir()
    (run.final / "adapter_model.safetensors").write_bytes(b"\0" * 100)
    with pytest.raises(RunError) as err:
        merge_run(run, tmp_path / "out")
    assert err.value.message.startswith("run run: final/adapter_model.safetensors is damaged")
    assert "no complete checkpoint to merge instead" in err.value.message
    assert not (tmp_path / "out").exists()


def test_a_disk_that_fills_during_the_merge_is_said_and_leaves_nothing(tmp_path, lora_run, monkeypatch):
    """The tokenizers library reports ENOSPC as a bare Exception ("No space left on device (os error 28)"),
    which went past the merge's error handling as a traceback (a 2 MB tmpfs). Made to fail the same way
    here, since a full disk needs a mount."""
    from zerotui.core.errors import StorageError
    from zerotui.core.export import merge as merge_mod

    class FullDisk:
        def save_pretrained(self, folder):
            raise Exception("No space left on device (os error 28)")

    monkeypatch.setattr(merge_mod, "run_tokenizer", lambda plan, final: FullDisk())
    with pytest.raises(StorageError) as err:
        merge_run(lora_run, tmp_path / "out")
    assert err.value.message.startswith(f"writing a bf16 lora merge of ") and f"to {tmp_path} failed: the disk is full (" in err.value.message
    assert "nothing was left behind" in err.value.message and "-o a folder on a disk" in err.value.hint
    assert list(tmp_path.iterdir()) == []


def test_a_full_runs_final_merges_after_its_base_model_is_gone(tmp_path, full_run):
    # final/ of a full fine-tune is a whole model with its config: merging it needs nothing of the base,
    # which users delete once trained (it was refused: the base's config could not be read).
    from zerotui.core.plan.schema import load_plan

    paths = _copy_run(full_run, tmp_path / "run")
    gone = tmp_path / "deleted-base"
    paths.plan.write_text(load_plan(paths.plan).with_changes(model=str(gone)).to_yaml())
    from zerotui.core.export.merge import export_run

    result = export_run(paths, tmp_path / "out")
    assert result.source == "final"
    assert torch.equal(logits(load(tmp_path / "out")), logits(load(full_run.final)))
