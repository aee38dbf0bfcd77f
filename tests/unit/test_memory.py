"""The memory model: hand-computed budgets, activations against autograd's real saved tensors, agreement
with DeepSpeed's own estimator, monotonicity, speed, and the committed H200 measurements."""
from __future__ import annotations

from places import REPO
import itertools
import sys

import pytest

from zerotui.core.deepspeed.config import DS_SUB_GROUP_SIZE, NVME_SUB_GROUP_SIZE
from zerotui.core.hardware.types import GpuInfo, Hardware
from zerotui.core.estimate.budget import estimate
from zerotui.core.estimate.job import pinned
from zerotui.core.estimate.activations import LoraShape, model_bytes_per_token
from zerotui.core.estimate.ds_estimators import zero2_model_states, zero3_model_states
from zerotui.core.model.spec import _llama_family_spec, spec_for_plan
from zerotui.core.plan.schema import Plan

GIB = 2**30



def gpu_box(gib: float = 80, n: int = 1, ram_gib: float = 256) -> Hardware:
    gpus = [GpuInfo(index=i, name="test GPU", total_bytes=int(gib * GIB), free_bytes=int(gib * GIB),
                    compute_capability=(9, 0), bf16=True) for i in range(n)]
    return Hardware(gpus=gpus, ram_total_bytes=int(ram_gib * GIB), ram_available_bytes=int(ram_gib * GIB))


# A shape with round numbers: h 1024, 4 layers, 16 heads of 64, 4 KV heads, MLP 2048, vocab 1000.
ROUND = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 16,
         "num_key_value_heads": 4, "intermediate_size": 2048, "vocab_size": 1000, "tie_word_embeddings": False}


def test_hand_computed_stage2_bf16_budget():
    spec = _llama_family_spec("round", ROUND, "test")
    h, hkv, inter, layers, heads, vocab = 1024, 256, 2048, 4, 16, 1000
    psi = 2 * vocab * h + h + layers * (h * h + 2 * h * hkv + h * h + 3 * h * inter + 2 * h)
    assert spec.params_total == psi == 37_708_800
    plan = Plan(model="round", stage=2, micro_batch=8, seq_len=2048, reduce_bucket_size=1000, kernels="none")
    b = estimate(plan, gpu_box(), spec)
    g = b.breakdown["gpu"]
    tokens = 8 * 2048
    assert g["weights"] == 2 * psi                       # bf16 weights
    assert g["fp32 master"] == 4 * psi                   # ZeRO-2 on 1 GPU: the whole partition
    assert g["optimizer states"] == 8 * psi              # Adam exp_avg + exp_avg_sq
    assert g["communication buckets"] == 2 * 2 * 1000    # two 16-bit buckets with overlap_comm
    per_layer = 20 * h + 4 * hkv + 8 * inter + 4 * heads
    assert g["activations"] == tokens * (layers * per_layer + 8 * h)
    assert b.peak_phase == "backward" and g["logits/loss"] == 12 * tokens * vocab
    assert b.gpu_allocated_bytes == sum(v for k, v in g.items() if k not in ("fragmentation margin", "CUDA context"))
    assert b.gpu_bytes == sum(g.values())


def test_stage3_and_offload_move_states_off_the_gpu():
    spec = spec_for_plan(Plan(model="llama-2-7b"))
    psi = spec.params_total
    s3 = estimate(Plan(model="llama-2-7b", stage=3, gpus=4), gpu_box(n=4), spec).breakdown["gpu"]
    assert s3["weights"] == pytest.approx(2 * psi / 4, rel=1e-3)
    assert s3["optimizer states"] == pytest.approx(8 * psi / 4)
    off = estimate(Plan(model="llama-2-7b", stage=3, offload_optimizer="cpu", offload_params="cpu"), gpu_box(), spec)
    assert "optimizer states" not in off.breakdown["gpu"] and "fp32 master" not in off.breakdown["gpu"]
    assert off.breakdown["cpu"]["optimizer states"] == 8 * psi
    # the stage-3 working set with weights on the CPU: stage3_max_live_parameters of 16-bit weights
    assert off.breakdown["gpu"]["stage-3 working set"] == 2 * 10**9


def test_zero1_with_the_optimizer_offloaded_keeps_its_gradients_between_accumulation_boundaries():
    """ZeRO-1 reduces gradients only at the accumulation boundary, so with several micro-batches a step
    the full 16-bit gradients stay on the GPU while the next micro-batch runs, the optimizer on the CPU or
    not (1b-full-ho17/ho18 allocated 2.05 / 2.29 GiB more than an estimate without them). One micro-batch a
    step, or ZeRO-2 (gradients move to the host as they come), leave only the staging buffer; without
    overlap_comm ZeRO-1 reduces after backward, so even one micro-batch a step holds them then."""
    spec = _llama_family_spec("round", ROUND, "test")
    psi = spec.params_total

    def budget(stage: int, accum: int, overlap: bool = True):
        plan = Plan(model="round", stage=stage, offload_optimizer="cpu", micro_batch=4, grad_accum=accum,
                    seq_len=1024, kernels="none", overlap_comm=overlap)
        return estimate(plan, gpu_box(), spec)

    assert budget(1, 2).breakdown["gpu"]["gradients"] == 2 * psi
    assert "gradients" not in budget(1, 1).breakdown["gpu"] and "gradients" not in budget(2, 2).breakdown["gpu"]
    assert "optimizer states" not in budget(1, 2).breakdown["gpu"]  # still on the CPU
    assert budget(1, 1, overlap=False).gpu_allocated_bytes > budget(1, 1).gpu_allocated_bytes


def test_pinned_buffers_round_up_to_powers_of_two():
    assert pinned(4 * 10**9) == 2**32 and pinned(2**30) == 2**30 and pinned(2**30 + 1) == 2**31
    assert pinned(3 * 10**9, pin=False) == 3 * 10**9


def _saved_bytes(model, ids) -> int:
    """Bytes of every distinct storage autograd keeps for backward (weights excluded)."""
    import torch

    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids, labels=ids)
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    return sum(v for k, v in seen.items() if k not in weights)


SMALL = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
             intermediate_size=704, vocab_size=512, tie_word_embeddings=False)


@pytest.mark.parametrize("attention,precision,method,dropout,ckpt", [
    ("sdpa", "bf16", "full", 0.0, False), ("eager", "bf16", "full", 0.0, False),
    ("sdpa", "fp32", "full", 0.0, False), ("sdpa", "bf16", "full", 0.0, True),
    ("sdpa", "bf16", "lora", 0.0, False), ("sdpa", "bf16", "lora", 0.1, False),
])
def test_activation_formula_matches_autograd_saved_tensors(attention, precision, method, dropout, ckpt):
    """What the formula counts is what a real Hugging Face Llama keeps for backward (CPU, where a dropout
    mask has the input's dtype; the H200 sweep checks the CUDA kernels)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(**SMALL, max_position_embeddings=512, use_cache=False)
    cfg._attn_implementation = attention
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    model = LlamaForCausalLM(cfg).to(dtype)
    targets = ["q_proj", "k_proj", "v_proj", "o_proj"]
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=dropout, target_modules=targets,
                                                 task_type="CAUSAL_LM"), autocast_adapter_dtype=False)
    model.train()
    b, s = 2, 64
    ids = torch.randint(0, SMALL["vocab_size"], (b, s))
    got = _saved_bytes(model, ids)
    p = 4 if precision == "fp32" else 2
    spec = _llama_family_spec("small", {"model_type": "llama", **SMALL}, "test")
    lora = LoraShape(frozenset(targets), 8, dropout, mask_bytes=p) if method == "lora" else None
    predicted = b * s * model_bytes_per_token(spec, p, attention, s, lora, ckpt) + 4 * b * s * SMALL["vocab_size"]
    assert got == pytest.approx(predicted, rel=0.01)


DS_CASES = [(2, "none", "none", 1, 1), (2, "cpu", "none", 8, 1), (2, "none", "none", 4, 2),
            (3, "none", "none", 8, 1), (3, "cpu", "none", 4, 1), (3, "cpu", "cpu", 8, 2)]


@pytest.mark.parametrize("stage,offload,params,gpus,nodes,zero_init",
                         [(*case, z) for case in DS_CASES for z in (True, False)])
def test_deepspeed_estimate_matches_deepspeeds_functions(stage, offload, params, gpus, nodes, zero_init):
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    total, largest = 6_738_415_616, 131_072_000
    if stage == 2:
        assert zero2_model_states(total, gpus, nodes, offload == "cpu") == \
            estimate_zero2_model_states_mem_needs(total, gpus, nodes, cpu_offload=offload == "cpu")
    else:
        ours = zero3_model_states(total, largest, gpus, nodes, offload == "cpu", params == "cpu", zero_init)
        theirs = estimate_zero3_model_states_mem_needs(total, largest, gpus, nodes, cpu_offload=offload == "cpu",
                                                       cpu_offload_params=params == "cpu", zero_init=zero_init)
        assert ours == theirs[:2]


PLANS = [dict(stage=s, precision=pr, method=m, grad_ckpt=c, micro_batch=mb)
         for s, pr, m, c, mb in itertools.product((0, 1, 2, 3), ("bf16", "fp32"), ("full", "lora"),
                                                  (False, True), (1, 4))]


def _alloc(model="llama-2-7b", **fields) -> int:
    return estimate(Plan(model=model, **fields), gpu_box()).gpu_allocated_bytes


@pytest.mark.parametrize("fields", PLANS, ids=lambda f: "-".join(str(v) for v in f.values()))
def test_monotone_in_sequence_batch_method_and_checkpointing(fields):
    base = _alloc(seq_len=1024, **fields)
    assert _alloc(**{**fields, "seq_len": 2048}) >= base           # longer sequence never lowers it
    assert _alloc(seq_len=1024, **{**fields, "micro_batch": fields["micro_batch"] * 2}) >= base
    if fields["method"] == "full":
        assert _alloc(seq_len=1024, **{**fields, "method": "lora"}) <= base   # LoRA never more than full
    if not fields["grad_ckpt"]:
        assert _alloc(seq_len=1024, **{**fields, "grad_ckpt": True}) <= base


@pytest.mark.parametrize("method,seq", [("full", 512), ("full", 4096), ("lora", 2048)])
def test_more_offload_never_raises_gpu_memory(method, seq):
    ladder3 = [_alloc(stage=3, method=method, seq_len=seq, offload_optimizer=o, offload_params=p)
               for o, p in (("none", "none"), ("cpu", "none"), ("cpu", "cpu"))]
    assert ladder3 == sorted(ladder3, reverse=True)
    for stage in (1, 2):
        assert _alloc(stage=stage, method=method, seq_len=seq, offload_optimizer="cpu") <= \
            _alloc(stage=stage, method=method, seq_len=seq)


def test_more_gpus_never_raise_the_per_gpu_states():
    one = estimate(Plan(model="llama-2-13b", stage=3, gpus=1), gpu_box(n=1)).gpu_allocated_bytes
    eight = estimate(Plan(model="llama-2-13b", stage=3, gpus=8), gpu_box(n=8)).gpu_allocated_bytes
    assert eight < one


def test_zero3_keeps_frozen_linear_inputs_under_lora():
    """Stage 3's LinearFunctionForZeroStage3 keeps every Linear's input (measured +p·(2h+I) a layer)."""
    spec = spec_for_plan(Plan(model="llama-2-7b"))
    s2 = estimate(Plan(model="llama-2-7b", method="lora", stage=2), gpu_box(), spec).breakdown["gpu"]["activations"]
    s3 = estimate(Plan(model="llama-2-7b", method="lora", stage=3), gpu_box(), spec).breakdown["gpu"]["activations"]
    h, inter = spec.hidden_size, spec.intermediate_size
    assert s3 - s2 == 512 * (spec.num_layers * 2 * (2 * h + inter) + 2 * h)


def test_cpu_only_machine_puts_everything_in_host_ram():
    b = estimate(Plan(model="tiny", stage=2), Hardware(ram_total_bytes=8 * GIB))
    assert b.gpu_bytes == 0 and b.fits and "activations" in b.breakdown["cpu"]
    assert any("no GPU" in w for w in b.warnings)


def test_cpu_only_machine_counts_offloaded_states_in_host_ram_too():
    # Offloading to "cpu" on a CPU-only machine moves nothing out of host RAM: a 7B full fine-tune
    # must not look like it fits in 8 GiB just because the GPU side is empty.
    plan = Plan(model="llama-2-7b", stage=3, offload_optimizer="cpu", offload_params="cpu", precision="fp16")
    b = estimate(plan, Hardware(ram_total_bytes=64 * GIB))
    assert b.gpu_bytes == 0 and not b.fits
    assert b.cpu_bytes > 16 * plan_params(plan)  # Adam states alone are 12 bytes a parameter
    assert "optimizer states" in b.breakdown["cpu"]


def plan_params(plan: Plan) -> int:
    return spec_for_plan(plan).params_total


def test_nvme_offload_counts_disk_host_buffers_and_warns_what_the_gpu_run_showed(tmp_path):
    plan = Plan(model="llama-2-7b", stage=3, offload_optimizer="nvme", offload_params="nvme", nvme_path=tmp_path)
    b = estimate(plan, gpu_box())
    psi = b.params_total
    assert b.nvme_bytes == 16 * psi + 2 * psi
    assert not b.fits  # no NVMe disk on this machine: capacity 0
    # weights on NVMe ran out of swap buffers at the second step with DeepSpeed's reuse distance (on an H200
    # and on the CPU); zerotui's own (0) trains, so only a plan that sets another is warned
    assert not any("weights on NVMe" in w for w in b.warnings)
    kept = estimate(plan.with_changes(stage3_max_reuse_distance=10**9), gpu_box())
    assert any("weights on NVMe with stage3_max_reuse_distance 1000000000" in w for w in kept.warnings)
    optimizer_only = estimate(plan.with_changes(offload_params="cpu"), gpu_box())
    assert not any("weights on NVMe" in w for w in optimizer_only.warnings)
    # the host parts that the GPU run's 7.6 GiB were: the sub-group's gradient buffer, Adam's first moments
    # (at the step; pinned, the moment the gradient partition is pinned comes higher on a 7B: see below)
    at_step = estimate(plan.with_changes(offload_params="cpu", pin_memory=False), gpu_box())
    assert {"fp32 gradient buffer (largest sub-group)", "Adam's first-step moments (largest sub-group)",
            "NVMe swap buffers (page-locked)"} <= set(at_step.breakdown["cpu"])


def test_zero3_offload_with_weights_on_the_gpu_counts_the_steps_cast_of_a_sub_group(tmp_path):
    """The step copies each sub-group's fp32 weights into its 16-bit GPU partition, casting on the host
    first (seen on an H100 and accounting for the sweep's -7.6% host row): 2 bytes per element of the
    largest sub-group, only where the 16-bit weights live on the GPU."""
    cast = "step: a sub-group cast to 16 bits"
    for oo, size in (("cpu", DS_SUB_GROUP_SIZE), ("nvme", NVME_SUB_GROUP_SIZE)):
        # unpinned: the moment the gradient partition is pinned, which has no cast, is not the peak then
        plan = Plan(model="llama-2-7b", stage=3, offload_optimizer=oo, nvme_path=tmp_path, pin_memory=False)
        assert estimate(plan, gpu_box()).breakdown["cpu"][cast] == 2 * size
        for op in ("cpu", "nvme"):  # the fp32 values are cast into host buffers in place
            assert cast not in estimate(plan.with_changes(offload_params=op), gpu_box()).breakdown["cpu"]
    # a model smaller than one sub-group: the cast is of the weights there are
    small = Plan(model="qwen2.5-0.5b", stage=3, offload_optimizer="cpu")
    spec = spec_for_plan(small)
    got = estimate(small, gpu_box(), spec).breakdown["cpu"][cast]
    assert got == 2 * min(DS_SUB_GROUP_SIZE, spec.params_total)
    cpu_only = estimate(Plan(model="llama-2-7b", stage=3, offload_optimizer="cpu"), Hardware(ram_total_bytes=GIB))
    assert cast not in cpu_only.breakdown["cpu"]  # no GPU: copy_ casts within host RAM, in place


def test_zero3_optimizer_offload_peaks_while_its_gradient_partition_is_pinned(tmp_path):
    """ZeRO-3 makes the host gradient partition with torch.zeros and pins a copy before letting the
    original go (seen on an H100, 1.1B with the optimizer and weights on NVMe: the run's host peak, before
    any step; a held-out run with only the optimizer there read 10.12 GiB against 9.95 estimated): for a
    moment the 16-bit buffer is there twice, while what the first step makes is not there yet."""
    pinning = "initialise: pinning the gradient partition"
    pageable = "gradient partition before pinning (pageable, freed after)"
    plan = Plan(model="llama-2-7b", stage=3, offload_optimizer="nvme", nvme_path=tmp_path)
    n = spec_for_plan(plan).params_total  # a full fine-tune: every weight has a gradient
    b = estimate(plan, gpu_box())
    assert b.host_phase == pinning
    assert b.breakdown["cpu"][pageable] == 2 * n  # bf16: the pinned copy is counted beside it, rounded up
    assert b.breakdown["cpu"]["gradient partition (pinned)"] == pinned(2 * n)
    assert "Adam's first-step moments (largest sub-group)" not in b.breakdown["cpu"]  # made by the first step
    unpinned = estimate(plan.with_changes(pin_memory=False), gpu_box())
    assert b.cpu_bytes > unpinned.cpu_bytes
    assert unpinned.host_phase != pinning and pageable not in unpinned.breakdown["cpu"]  # nothing is copied
    # CPU Adam makes its 8 bytes of moments per weight in its first step: after that, the step's moment is higher
    on_cpu = estimate(plan.with_changes(offload_optimizer="cpu"), gpu_box(ram_gib=512))
    assert on_cpu.host_phase == "after initialise" and pageable not in on_cpu.breakdown["cpu"]
    cpu_only = estimate(plan.with_changes(offload_optimizer="cpu"), Hardware(ram_total_bytes=GIB))
    assert pageable not in cpu_only.breakdown["cpu"]  # DeepSpeed's CPU accelerator does not pin


def test_zero12_optimizer_offload_holds_large_gradients_until_backward_ends():
    """DeepSpeed 0.19.8 with the optimizer offloaded clones every gradient larger than the reduce bucket and
    leaves the clone on its weight until the backward's epilogue (1b-full-ho69's allocator history: 1.48 GiB
    of MLP and head gradients beside one recomputed layer, where the estimate had none). Stage 2 keeps a
    rank's partition of them, stage 1 every one."""
    plan = Plan(model="llama-2-7b", stage=2, offload_optimizer="cpu", micro_batch=1, seq_len=512, grad_ckpt=True,
                kernels="auto")
    spec = spec_for_plan(plan)
    bucket = spec.hidden_size ** 2  # zerotui's reduce bucket (core/deepspeed/config.py bucket_sizes)
    big = sum(n * c for n, c in spec.param_shapes if n > bucket)
    assert 0 < big < spec.params_total  # the MLP and the embeddings; attention's square matrices are not larger
    held = "gradients (held until backward ends)"
    one = estimate(plan, gpu_box())
    assert one.peak_phase == "backward end" and one.breakdown["gpu"][held] == 2 * big
    two = estimate(plan, gpu_box(n=2))
    assert two.breakdown["gpu"][held] == 2 * big / 2
    stage1 = estimate(plan.with_changes(stage=1), gpu_box(n=2))
    assert stage1.breakdown["gpu"][held] == 2 * big
    # several micro-batches a step keep every gradient at stage 1 (job.offload_keeps_gradients): counted there
    assert held not in estimate(plan.with_changes(stage=1, grad_accum=2), gpu_box()).breakdown["gpu"]
    assert held not in estimate(plan.with_changes(offload_optimizer="none"), gpu_box()).breakdown["gpu"]


def test_zero12_optimizer_offload_reserves_its_initialisation_pool():
    """The engine flattens the 16-bit weights on the GPU when the device's free memory holds them, then clones
    its partition there before moving it to the host: three copies reserved before the first step, and the
    fp64 gradient-norm block on top (1b-full-ho69, and ho70-ho72 held out: 8.84 GiB by NVML, 8.92 estimated,
    where the estimate had been 6.49-7.87). A card too small to flatten on leaves two copies."""
    plan = Plan(model="llama-2-7b", stage=2, offload_optimizer="cpu", micro_batch=1, seq_len=512, grad_ckpt=True,
                kernels="auto")
    spec = spec_for_plan(plan)
    w = 2 * spec.params_total
    norm = 8 * max(n for n, _ in spec.param_shapes)  # margin.offload_norm_block: the embedding's fp64 copy
    for gib, copies in ((80, 3), (24, 2)):
        b = estimate(plan, gpu_box(gib))
        assert b.gpu_bytes - b.breakdown["gpu"]["CUDA context"] == pytest.approx(copies * w + norm, rel=1e-6)
        # named apart from fragmentation in the breakdown (zerotui estimate, the wizard's b)
        assert b.breakdown["gpu"]["initialisation's pool beyond the peak (offload)"] > 0
    # without the offload the fp32 master and Adam's states live on the GPU and the step outgrows this moment
    from zerotui.core.estimate import gpu, job

    for oo, pool in (("cpu", True), ("none", False)):
        j = job.job_for(plan.with_changes(offload_optimizer=oo), spec, gpu_box(), {})
        assert (gpu.peak(j, gpu.model_states(j)).margin_terms["initialisation's pool (offload)"] > 0) is pool


def test_estimate_per_keystroke_is_arithmetic_only(monkeypatch):
    """The bar recomputes on every key: after the first call, estimate() must not build the model again
    (the meta-device build is the only slow part). Its time per call is measured by
    benchmarks/wizard_latency.py (median 0.014 ms on this machine), not asserted here."""
    from zerotui.core.model import spec as models

    plan = Plan(model="llama-3-70b", method="lora", stage=3, gpus=8, offload_optimizer="cpu", grad_ckpt=True)
    hw = gpu_box(n=8)
    first = estimate(plan, hw)
    builds = []
    monkeypatch.setattr(models, "_resolve", lambda *a, **k: builds.append(a))
    monkeypatch.setattr(models, "_meta_spec", lambda *a, **k: builds.append(a))
    for micro_batch in (1, 2, 4, 8):
        again = estimate(plan.model_copy(update={"micro_batch": micro_batch}), hw)
    assert builds == []
    assert again.gpu_bytes > first.gpu_bytes  # the estimate still follows the plan


def test_committed_h200_measurements_meet_the_targets():
    """The estimator against both H200 sweeps (benchmarks/estimator/data): GPU allocated median ≤ 5%,
    worst ≤ 12%; host RAM on rows from a fresh worker median ≤ 5% and within 20% on all but the one
    row docs/estimator.md explains."""
    sys.path.insert(0, str(REPO))
    from benchmarks.estimator.compare import estimates, load, measured, summary

    rows = load([str(REPO / "benchmarks/estimator/data/sweep1-raw.jsonl"),
                 str(REPO / "benchmarks/estimator/data/sweep2-raw.jsonl")])
    measured(rows)
    estimates(rows)
    s = summary(rows)
    assert s["rows"] >= 45
    assert s["gpu_median_abs_error"] <= 0.05 and s["gpu_worst_abs_error"] <= 0.12
    assert s["host_median_abs_error"] <= 0.05
    misses = {r["id"] for r in rows if r.get("host_error") is not None and abs(r["host_error"]) > 0.20}
    assert misses <= {"n-s3-lora-all-r32-mb4-ckpt"}
    # What must fit (allocated + margin + context) against nvidia-smi on the fresh-worker rows: never more
    # than 3% short; at most 11% over (n-s3-lora-all-r32, +10.3%: 1.55 GiB beyond allocated where the
    # margin gives 2.6, and a CUDA context 0.38 GiB under the one assumed; docs/estimator.md).
    assert s["gpu_bytes_rows"] >= 15
    assert s["gpu_bytes_worst_under"] >= -0.03 and s["gpu_bytes_worst_over"] <= 0.11


def test_no_seed_scenario_measured_above_its_estimate():
    """The jobs users bring, measured on the H200 under a 24 GiB cap (benchmarks/results/seed-scenarios-*):
    today's estimator never promises less than a run took by more than 3% (the dangerous side), and the
    runs the budget says fit ran every step under their cap. The held-out Qwen2.5-1.5B full fine-tune
    (-5.3%) and its untied twin (out of memory under the cap with 23.0 GiB estimated) broke both until
    DeepSpeed's fp64 gradient norm with the optimizer on the CPU was counted (2026-12-03, sixth session):
    the budget now puts the twin above its cap, as it went. One run did not start (no bitsandbytes on
    that machine)."""
    sys.path.insert(0, str(REPO))
    from benchmarks.seed_scenarios.table import rows

    table = rows([str(p) for p in sorted((REPO / "benchmarks/results").glob("seed-scenarios-*.json"))])
    assert len(table) >= 14
    unrun = [(r["scenario"], r["file"]) for r in table if r["unrun"]]
    assert unrun == [("7b-qlora-fit", "seed-scenarios-fine-a-2026-12-03.json")], unrun
    measured = [r for r in table if not r["oom"] and not r["unrun"]]
    assert all(r["error"] is not None for r in measured)
    short = {r["scenario"]: r["error"] for r in measured if r["error"] < -0.03}
    assert not short, short
    # Results a-c, the seed's own jobs, within +5%; every other row within +10%: the worst is 1b-full-ho18,
    # +9.3% (ZeRO-1 with the optimizer on the CPU, which the fp64 norm's 0.49 GiB block raised; refit of
    # 2026-12-03, sixth session). tests/unit/test_margin.py holds every kind of row to -3%.
    ours = [r for r in measured if r["file"].startswith(("seed-scenarios-7b-a-", "seed-scenarios-b-", "seed-scenarios-c-"))]
    assert len(ours) >= 8 and all(r["error"] <= 0.05 for r in ours), [(r["scenario"], r["error"]) for r in ours]
    # The rows held out for the CUDA-context rule (seed-scenarios-context-ho, PyTorch's default allocator)
    # over-estimate more: a 1.1B QLoRA by 13.8%, an fp16 ZeRO-2 by 12.0% (docs/estimator.md, "The CUDA
    # context"); held to +15%.
    held_out = [r for r in measured if r["file"].startswith("seed-scenarios-context-ho-")]
    assert len(held_out) == 5 and all(r["error"] <= 0.15 for r in held_out), [(r["scenario"], r["error"]) for r in held_out]
    # The two ZeRO-1 offload plans held out on 2026-12-03 (seventh session) from a rule that was then
    # dropped (docs/estimator.md) come out +10.0% (ho34) and +17.1% (ho35): held to +18%. ho35 ran again on
    # 2026-12-05 (twenty-first session, seed-scenarios-fp16z3c): +14.3%, its excess repeating to 0.12 GiB.
    # Since 2026-12-06 (no gradient share with the optimizer offloaded, margin.gradient_churn): -0.6%, +3.7%
    # and +4.9%; ho35's third run +5.3% since the thirty-first session's refit (a 0.1 GiB base): held to +5.5%.
    zero1 = [r for r in measured if r["file"].startswith("seed-scenarios-zero1-") or r["scenario"] == "1b-full-ho35"]
    assert len(zero1) == 3 and all(-0.03 <= r["error"] <= 0.055 for r in zero1), [(r["scenario"], r["error"]) for r in zero1]
    # 1b128k-lora-s3-ho96 (bf16 ZeRO-3 LoRA on the 128k vocabulary, 2026-12-07): +12.1% until its loss holes
    # were counted as its freed 16-bit logits (loss_holes.freed_logits, thirty-first session): +0.7%.
    zero3_adapter = [r for r in measured if r["scenario"] == "1b128k-lora-s3-ho96"]
    assert len(zero3_adapter) == 1 and -0.03 <= zero3_adapter[0]["error"] <= 0.02, zero3_adapter
    # 3b-full-fit80 and ho84 measured their 80 GiB cap: the allocator released its free pages at the first
    # step (one retry). Since the ZeRO-1 guard for the step's copy on forward's pool (step_copy, thirty-third
    # session) their estimate is the pool their allocator history says they would reach without a cap
    # (76.4 GiB, at least 77.8 in the history): +15.2% and +15.5% against the capped peak, held to +16%.
    # (On the H200 under a 135 GiB cap, 2026-12-07, `fit` picked another plan for the 3B, ZeRO-2 4 x 4: it
    # did not meet its cap and is held like the rest. ho84's third run, thirty-seventh session, asked a 135 GiB
    # cap of an 80 GB H100: the card bounded it, and it released as the capped runs did, to the MiB.)
    capped_release = [r for r in measured if r["scenario"] in ("3b-full-fit80", "3b-full-ho84")
                      and r["cap"] <= 80 * 2**30]
    assert len(capped_release) == 3 and all(r["error"] <= 0.16 for r in capped_release), capped_release
    rest = [r for r in measured if r not in held_out and r not in zero1 and r not in zero3_adapter
            and r not in capped_release]
    assert all(r["error"] <= 0.10 for r in rest), [(r["scenario"], r["error"]) for r in rest]
    # every run the budget said fits under its cap ran every step (three ran them and then failed to write
    # their final checkpoint: the device's disk was full)
    promised = [r for r in table if r["estimate"] <= r["cap"] and r["state"] and not r["unrun"]]
    broken = {(r["scenario"], r["file"]) for r in promised if not r["ran"] and not r["host_killed"]}
    assert not broken, broken
    # the plan forced past the budget, the untied Qwen2 twin, and 1b-full-ho32 run by mistake under 24 GiB
    # (2026-12-06; estimate 28.9 GiB) went out of memory under their caps, as the budget says they would
    ooms = [r for r in table if r["oom"]]
    assert {r["scenario"] for r in ooms} == {"7b-lora-oom", "q1.5bu-full-fit", "1b-full-ho32"}
    assert all(r["estimate"] > r["cap"] for r in ooms)


def test_qlora_stores_the_linear_weights_in_4_bits_with_their_constants():
    """Every linear weight but the head in 4 bits, plus one 8-bit absmax per 64 weights and one fp32 per
    256 blocks (double quantisation); norms, embeddings and the head stay 16-bit; the adapters train."""
    spec = _llama_family_spec("round", ROUND, "test")
    h, hkv, inter, layers, vocab = 1024, 256, 2048, 4, 1000
    linear = layers * (h * h + 2 * h * hkv + h * h + 3 * h * inter)
    plan = Plan(model="round", method="qlora", stage=2, lora_targets=["q_proj"], lora_r=8, micro_batch=1)
    g = estimate(plan, gpu_box(), spec).breakdown["gpu"]
    adapters = layers * 8 * (h + h)
    per_weight = 0.5 + 1 / 64 + 4 / (64 * 256)
    assert g["weights (4-bit base)"] == int(2 * (spec.params_total + adapters - linear) + linear * per_weight)
    assert g["dequantisation buffer"] == 2 * h * inter  # the largest linear, dequantised to bf16
    assert g["optimizer states"] == 8 * adapters
    no_dq = estimate(plan.with_changes(double_quant=False), gpu_box(), spec).breakdown["gpu"]["weights (4-bit base)"]
    assert no_dq - g["weights (4-bit base)"] == pytest.approx(linear * (4 / 64 - 1 / 64 - 4 / (64 * 256)), abs=2)
    # what PyTorch allocates is smaller (the totals also count the CUDA context and its NCCL
    # communicators, core/estimate/cuda_context.py, which a model this small does not outweigh)
    lora = estimate(plan.with_changes(method="lora"), gpu_box(), spec)
    assert estimate(plan, gpu_box(), spec).gpu_allocated_bytes < lora.gpu_allocated_bytes


def test_a_gpu_memory_cap_is_the_capacity_the_budget_plans_against():
    big = gpu_box(gib=141)
    plan = Plan(model="llama-2-7b", method="lora", grad_ckpt=True)
    assert estimate(plan, big).gpu_capacity == 141 * 2**30
    capped = estimate(plan.with_changes(gpu_mem_cap="24GiB"), big)
    assert capped.gpu_capacity == 24 * 2**30 and capped.gpu_bytes == estimate(plan, big).gpu_bytes
    assert not estimate(plan.with_changes(gpu_mem_cap="8GiB"), big).fits
    # a cap at or above the card limits nothing, and the budget says so rather than take it silently
    assert not any("limits nothing" in w for w in capped.warnings)
    above = estimate(plan.with_changes(gpu_mem_cap="200GiB"), big)
    assert above.gpu_capacity == 141 * 2**30
    assert any("cap 200.0 GiB is not below the card's 141.0 GiB, so it limits nothing" in w for w in above.warnings)


def _margin(plan, spec) -> tuple[dict[str, float], float, float]:
    from zerotui.core.estimate import gpu
    from zerotui.core.estimate.job import job_for

    job = job_for(plan, spec, gpu_box())
    peak = gpu.peak(job, gpu.model_states(job))
    return peak.margin_terms, peak.margin, job.psit


def test_margin_is_the_sum_of_its_sources_and_the_step_adds_a_segment_only_when_nothing_cached_fits(monkeypatch):
    """On PyTorch's default allocator (the user's own setting; tests/unit/test_margin.py has expandable
    segments' rule) a full fine-tune's first optimizer step needs its flat fp32 gradient copy (4 bytes per
    trainable element) as a new segment when that copy is larger than every block freed before it (the
    loss's fp32 blocks here); with a bigger loss block, or LoRA's small copy, the cache serves it."""
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False")
    spec = _llama_family_spec("round", ROUND, "test")
    small = Plan(model="round", method="full", stage=2, micro_batch=1, seq_len=128, kernels="none")
    terms, margin, psit = _margin(small, spec)
    assert sum(terms.values()) == margin
    assert terms["first step"] == 4 * psit
    assert estimate(small, gpu_box(), spec).breakdown["gpu"]["fragmentation margin"] == int(margin)
    # 4·T·V fp32 logits larger than the copy: the copy lands in a freed block
    assert _margin(small.with_changes(micro_batch=64, seq_len=1024), spec)[0]["first step"] == 0
    assert _margin(small.with_changes(method="lora"), spec)[0]["first step"] == 0
    # resident states are not a source: offloading the optimizer drops the step and gradient terms only
    off = _margin(small.with_changes(offload_optimizer="cpu"), spec)[0]
    assert off["first step"] == 0 and off["gradients"] == 0
    assert off["loss"] == terms["loss"] and off["base"] == terms["base"]


def test_zero3_beyond_2048_tokens_keeps_a_quarter_of_the_allocation_as_margin_on_the_default_allocator():
    """The floor set from the held-out 7B ZeRO-3 LoRA at 1 x 4,096 tokens (core/estimate/margin.py): with
    PyTorch's default allocator (the user's own PYTORCH_CUDA_ALLOC_CONF, here empty) it lifts that plan's
    margin to 0.25 of allocated, and leaves 2,048 tokens and other stages as they were. With zerotui's
    own setting for the plan (expandable segments, core/plan/allocator.py) there is no floor."""
    base = dict(model="llama-2-7b", method="lora", precision="fp16", stage=3, offload_optimizer="cpu",
                micro_batch=1, grad_accum=2, grad_ckpt=True, kernels="none")
    default = {"PYTORCH_CUDA_ALLOC_CONF": ""}
    long = estimate(Plan(seq_len=4096, **base), gpu_box(24), env=default)
    margin = long.breakdown["gpu"]["fragmentation margin"]
    assert margin == pytest.approx(0.25 * long.gpu_allocated_bytes, rel=1e-6)
    for plan in (Plan(seq_len=2048, **base), Plan(seq_len=4096, **{**base, "stage": 2})):
        b = estimate(plan, gpu_box(24), env=default)
        assert b.breakdown["gpu"]["fragmentation margin"] < 0.25 * b.gpu_allocated_bytes
    for env in ({}, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128, expandable_segments:True"}):
        ours = estimate(Plan(seq_len=4096, **base), gpu_box(24), env=env)
        assert ours.gpu_allocated_bytes == long.gpu_allocated_bytes
        assert ours.breakdown["gpu"]["fragmentation margin"] < 0.2 * ours.gpu_allocated_bytes
