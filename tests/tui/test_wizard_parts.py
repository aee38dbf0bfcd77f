"""The wizard's pure parts: plain-word hardware warnings, precision availability, data preview,
model sources, the plan in words. No screen needed."""
from __future__ import annotations

import json

import pytest

from zerotui.core.errors import DataError
from zerotui.core.hardware.types import GpuInfo
from zerotui.core.plan.schema import Plan
from zerotui.tui.wizard.data_preview import preview
from zerotui.tui.wizard.demo_hardware import cpu_only, workstation_24gb
from zerotui.tui.wizard.model_sources import cached_models
from zerotui.tui.wizard.plan_words import plan_in_words
from zerotui.tui.wizard.hardware import hardware_warnings
from zerotui.tui.wizard.precision import precision_choices

GIB = 1 << 30


def test_hardware_warnings_say_what_a_machine_cannot_do():
    cpu = hardware_warnings(cpu_only())
    assert any(w.startswith("No GPU found (NVML library not found") and "CPU demo" in w for w in cpu)
    assert any("NVMe offload is unavailable" in w for w in cpu)
    assert any("Only 24.0 GiB of RAM" in w for w in cpu)
    assert hardware_warnings(workstation_24gb()) == []
    old = workstation_24gb()
    old.gpus = [GpuInfo(0, "Tesla V100", 32 * GIB, 20 * GIB, (7, 0), bf16=False)]
    old.shm_total_bytes = 64 << 20
    words = " | ".join(hardware_warnings(old))
    assert "no native bf16" in words and "already in use" in words and "--shm-size" in words


def test_precision_choices_disable_what_cannot_run_with_the_reason():
    assert all(reason == "" for _, _, reason in precision_choices(workstation_24gb()))
    old = workstation_24gb()
    old.gpus = [GpuInfo(0, "Tesla V100", 32 * GIB, 32 * GIB, (7, 0), bf16=False)]
    reasons = {v: r for v, _, r in precision_choices(old)}
    assert "Ampere" in reasons["bf16"] and "7.0" in reasons["bf16"] and not reasons["fp16"]
    no_fp16_cpu = {v: r for v, _, r in precision_choices(cpu_only(), cpuinfo="flags : avx2 avx512f")}
    assert not no_fp16_cpu["bf16"] and "fp16" in no_fp16_cpu["fp16"]
    fp16_cpu = {v: r for v, _, r in precision_choices(cpu_only(), cpuinfo="flags : avx512_fp16 amx_bf16")}
    assert not fp16_cpu["fp16"]


def test_preview_reads_the_first_rows_and_detects_the_format(tmp_path):
    rows = [{"instruction": f"q{i}", "input": "", "output": f"a{i}"} for i in range(50)]
    jl = tmp_path / "train.jsonl"
    jl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = preview(str(jl))
    assert p.format == "alpaca" and p.columns == ["instruction", "input", "output"] and len(p.rows) == 5
    assert p.rows[0] == ["q0", "", "a0"]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"messages": [{"role": "user", "content": "hi"}]}]))
    assert preview(str(chat)).format == "chat"
    csv_file = tmp_path / "pr.csv"
    csv_file.write_text("prompt,response\nhello,world\n")
    assert preview(str(csv_file)).rows == [["hello", "world"]]
    txt = tmp_path / "t.txt"
    txt.write_text("one\n\ntwo\n")
    assert preview(str(txt)).rows == [["one"], ["two"]]
    assert preview("sample").format == "alpaca"                # the shipped sample
    assert preview("hub:org/data").note.startswith("hub dataset")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{broken\n')
    with pytest.raises(DataError, match="line 2 is not valid JSON"):
        preview(str(bad))
    with pytest.raises(DataError, match="no such file"):
        preview(str(tmp_path / "missing.jsonl"))
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"foo": 1}\n')
    p = preview(str(odd))
    assert p.format == "unknown" and "cannot tell the format" in p.note   # core.data.prompts' own message


def test_hf_cache_models_are_listed_by_hub_id(tmp_path):
    snap = tmp_path / "models--org--small-llama" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (tmp_path / "models--org--no-config" / "snapshots" / "x").mkdir(parents=True)
    (tmp_path / "datasets--org--data").mkdir()
    assert [c.value for c in cached_models(tmp_path)] == ["org/small-llama"]
    assert cached_models(tmp_path / "nowhere") == []


def test_plan_in_words_names_the_choices():
    plan = Plan(model="llama-2-7b", stage=3, offload_optimizer="cpu", offload_params="cpu", precision="fp16",
                micro_batch=2, grad_accum=8, seq_len=1024, grad_ckpt=True)
    text = "\n".join(plan_in_words(plan, workstation_24gb()))
    assert "float16 with dynamic loss scaling" in text and "ZeRO stage 3" in text
    assert "Optimizer states live in CPU RAM, weights between uses in CPU RAM" in text
    assert "2 sequence(s) of 1024 tokens per GPU × 8 accumulation × 1 = 16 sequences" in text
    lora = "\n".join(plan_in_words(Plan(method="lora", lora_r=8), cpu_only()))
    assert "LoRA adapters (r=8" in lora and "1 CPU process (no GPU here)" in lora
    assert "Optimizer states live in the training process's RAM" in lora and "tokens per process" in lora
