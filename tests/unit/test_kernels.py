"""Fused kernels (core/model/kernels.py): when Liger applies, the error when it is insisted on and cannot,
and what the estimator changes when it applies. The kernels themselves need a GPU: their speed and
memory are measured there (benchmarks/results/)."""
from __future__ import annotations

import pytest

from zerotui.core.errors import ModelError
from zerotui.core.estimate.activations import fused_logits_bytes, logits_bytes
from zerotui.core.estimate.budget import estimate
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.model import kernels
from zerotui.core.plan.schema import Plan

GiB = 1 << 30


def _gpu_box(n: int = 1) -> Hardware:
    gpus = [GpuInfo(index=i, name="NVIDIA H200", total_bytes=141 * GiB, free_bytes=140 * GiB,
                    compute_capability=(9, 0)) for i in range(n)]
    return Hardware(gpus=gpus, ram_total_bytes=512 * GiB, ram_available_bytes=500 * GiB, cpu_cores=16)


@pytest.fixture
def liger_here(monkeypatch):
    """Liger importable, patching llama (as on a GPU machine with liger-kernel installed)."""
    monkeypatch.setattr(kernels, "liger_status", lambda: (True, "", frozenset({"llama", "qwen2"})))


@pytest.fixture
def no_liger_here(monkeypatch):
    monkeypatch.setattr(kernels, "liger_status",
                        lambda: (False, "liger-kernel is not installed or does not import (ImportError)", frozenset()))


def test_auto_is_off_without_a_gpu_and_says_so():
    c = kernels.choose("auto", "llama", 2, on_gpu=False)
    assert (c.liger, c.fused_ce) == (False, False)
    assert "no CUDA GPU" in c.reason


def test_auto_on_a_gpu_with_liger_fuses_the_loss_except_under_zero3(liger_here):
    assert kernels.choose("auto", "llama", 2, on_gpu=True) == kernels.KernelChoice(True, True, "on")
    z3 = kernels.choose("auto", "llama", 3, on_gpu=True)
    assert z3.liger and not z3.fused_ce
    other = kernels.choose("auto", "gpt2", 2, on_gpu=True)
    assert not other.liger and "'gpt2'" in other.reason
    assert not kernels.choose("none", "llama", 2, on_gpu=True).liger


def test_insisting_on_liger_where_it_cannot_run_names_what_is_missing(no_liger_here):
    plan = Plan(kernels="liger")
    with pytest.raises(ModelError) as err:
        kernels.require(plan, "llama", on_gpu=True)
    assert "kernels: liger cannot be used here" in err.value.message
    assert "not installed" in err.value.message and "pip install liger-kernel" in err.value.hint
    assert err.value.field == "kernels"
    # auto falls back quietly, with the reason
    assert kernels.require(Plan(kernels="auto"), "llama", on_gpu=True).liger is False


def test_planning_without_liger_installed_assumes_it_where_the_run_will_check(no_liger_here):
    c = kernels.planned("auto", "llama", 2, on_gpu=True)
    assert c.liger and c.fused_ce
    assert not kernels.planned("auto", "gpt2", 2, on_gpu=True).liger
    assert not kernels.planned("auto", "llama", 2, on_gpu=False).liger


def test_fused_loss_never_holds_the_full_logits():
    tokens, vocab, hidden = 16 * 1024, 32000, 2048
    plain = logits_bytes(tokens, vocab, 2)
    fused = fused_logits_bytes(tokens, vocab, hidden, 2, head_trains=True)
    # Liger's chunk: ceil(V/h) = 16 -> 16384/16 = 1024 tokens a chunk (a power of two)
    assert fused["forward_peak"] - fused["kept"] == pytest.approx(6 * 1024 * vocab)
    assert fused["kept"] == pytest.approx(2 * tokens * hidden + 4 * tokens + 2 * vocab * hidden)
    assert fused["forward_peak"] < plain["forward_peak"] / 10


def test_the_budget_with_kernels_is_smaller_by_the_logits_and_leaner_activations(liger_here):
    hw = _gpu_box()
    base = dict(model="llama-2-7b", method="lora", stage=2, micro_batch=8,
                seq_len=1024, precision="bf16")
    off = estimate(Plan(kernels="none", **base), hw)
    on = estimate(Plan(kernels="auto", **base), hw)
    saved = off.gpu_bytes - on.gpu_bytes
    # at least the fp32 logits and their log-probabilities (8 bytes a logit) less
    assert saved > 8 * 8 * 1024 * 32000 * 0.9
    # the CPU budget of a machine with no GPU does not change
    cpu = Hardware(ram_total_bytes=64 * GiB, ram_available_bytes=60 * GiB, cpu_cores=2)
    assert estimate(Plan(kernels="none", **base), cpu).cpu_bytes == estimate(Plan(kernels="auto", **base), cpu).cpu_bytes


@pytest.fixture
def liger_that_must_not_import(tmp_path, monkeypatch):
    """Triton and liger-kernel installed (found on sys.path), each raising if anything imports it."""
    for name in ("triton", "liger_kernel"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise RuntimeError('planning imported {name}')\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_planning_finds_liger_without_importing_it(liger_that_must_not_import):
    """Importing liger-kernel pulls in transformers' model modules (15-20 s on a GPU machine): the
    estimate behind every launch, fit and keystroke must only look the packages up."""
    assert kernels.installed() == (True, "")
    assert kernels.planned("auto", "llama", 2, on_gpu=True) == kernels.KernelChoice(True, True, "on")
    assert not kernels.planned("auto", "llama", 3, on_gpu=True).fused_ce
    kernels.require_planned(Plan(kernels="liger"), "llama", on_gpu=True)  # a known architecture: no error
    with pytest.raises(ModelError) as err:
        kernels.require_planned(Plan(kernels="liger"), "gpt2", on_gpu=True)
    assert "'gpt2'" in err.value.message and err.value.field == "kernels"
    budget = estimate(Plan(model="llama-2-7b", method="lora", kernels="auto"), _gpu_box())
    assert budget.gpu_bytes > 0  # the whole estimate ran on the lookup alone


def test_the_launch_refuses_insisted_liger_without_a_gpu_or_the_package(monkeypatch):
    with pytest.raises(ModelError) as err:
        kernels.require_planned(Plan(kernels="liger"), "llama", on_gpu=False)
    assert "no CUDA GPU" in err.value.message
    monkeypatch.setattr(kernels.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError) as err:
        kernels.require_planned(Plan(kernels="liger"), "llama", on_gpu=True)
    assert "Triton is not installed" in err.value.message
    kernels.require_planned(Plan(kernels="auto"), "llama", on_gpu=True)  # auto never refuses
