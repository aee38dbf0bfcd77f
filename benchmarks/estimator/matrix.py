"""The configurations the estimator is validated on: model shapes and plan settings.

Each shape is a Llama-family config (random weights: memory and speed do not depend on the values).
Each configuration is a shape plus the Plan fields that differ from the defaults. The estimator reads
the same Plan, so a row's estimate and its measurement describe the same run.

Shapes (parameter counts exact, from building the model; see docs/estimator.md):
    llama-0.1b     h 768,  12 layers, MHA,        V 32000, untied   ~0.13B
    llama-1.1b     h 2048, 22 layers, GQA 32/4,   V 32000, untied   ~1.1B (TinyLlama's shape)
    llama-1b-128k  h 2048, 16 layers, GQA 32/8,   V 128256, tied    ~1.24B (Llama-3.2-1B's shape)
    llama-3b-128k  h 3072, 28 layers, GQA 24/8,   V 128256, tied    ~3.2B (Llama-3.2-3B's shape)
    llama-7b       h 4096, 32 layers, MHA,        V 32000, untied   ~6.7B (Llama-2-7B's shape)
    llama-2b-49k   h 2560, 24 layers, GQA 20/4,   V 49152, untied   ~2.2B (sweep 2 only: not calibrated)
    llama-7b-l8    Llama-2-7B's width with 8 of its 32 layers: a 7B full fine-tune's optimizer states
                   (~110 GB) do not fit one H200, and per-layer memory is what is being validated.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHAPES: dict[str, dict[str, Any]] = {
    "llama-0.1b": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=12,
                       intermediate_size=2048, vocab_size=32000, tie_word_embeddings=False),
    "llama-1.1b": dict(hidden_size=2048, num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4,
                       intermediate_size=5632, vocab_size=32000, tie_word_embeddings=False),
    "llama-1b-128k": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                          intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True),
    "llama-3b-128k": dict(hidden_size=3072, num_hidden_layers=28, num_attention_heads=24, num_key_value_heads=8,
                          intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True),
    "llama-7b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                     intermediate_size=11008, vocab_size=32000, tie_word_embeddings=False),
    "llama-7b-l8": dict(hidden_size=4096, num_hidden_layers=8, num_attention_heads=32, num_key_value_heads=32,
                        intermediate_size=11008, vocab_size=32000, tie_word_embeddings=False),
    # sweep 2 only: a shape the estimator was not calibrated on (GQA 20/4, 49k vocabulary)
    "llama-2b-49k": dict(hidden_size=2560, num_hidden_layers=24, num_attention_heads=20, num_key_value_heads=4,
                         intermediate_size=6912, vocab_size=49152, tie_word_embeddings=False),
    # CPU dry-run shapes: the same code paths in seconds on a laptop.
    "dry-a": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=176, vocab_size=512, tie_word_embeddings=False),
    "dry-b": dict(hidden_size=96, num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=6,
                  intermediate_size=256, vocab_size=1024, tie_word_embeddings=True),
}

COMMON_SHAPE = dict(max_position_embeddings=131072, rms_norm_eps=1e-5, hidden_act="silu",
                    attention_bias=False, mlp_bias=False, rope_theta=10000.0)

ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def llama_config_dict(shape: str) -> dict[str, Any]:
    """A config.json body for ``shape`` (what a Hugging Face Llama folder would hold)."""
    d = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **COMMON_SHAPE, **SHAPES[shape]}
    d["head_dim"] = d["hidden_size"] // d["num_attention_heads"]
    return d


def spec_for(shape: str):
    """zerotui's model spec for ``shape``, read from its config dictionary as a model folder would be."""
    from zerotui.core.model.spec import _llama_family_spec

    return _llama_family_spec(shape, llama_config_dict(shape), "benchmarks/estimator/matrix.py")


@dataclass
class Config:
    id: str
    shape: str
    plan: dict[str, Any] = field(default_factory=dict)   # Plan fields besides the defaults below
    steps: int = 3                                       # optimizer steps; the first is warm-up
    group: str = ""                                      # same job, other settings: the speed model's data

    def plan_fields(self) -> dict[str, Any]:
        base = {"name": self.id.replace("/", "-"), "model": self.shape, "max_steps": self.steps,
                "fp16_initial_scale_power": 8,  # random weights overflow 2**16 and skip the first steps
                "lora_dropout": 0.05, "grad_clip": 1.0}
        base.update(self.plan)
        return base


def _c(id_, shape, steps=3, group="", **plan) -> Config:
    return Config(id=id_, shape=shape, plan=plan, steps=steps, group=group)


CPU = {"offload_optimizer": "cpu"}
CPU_BOTH = {"offload_optimizer": "cpu", "offload_params": "cpu"}

# Sweep 1: calibration. Ordered so that the most informative rows come first (a killed command still
# returns them); rows needing JIT-built ops (stage 0 uses FusedAdam, offload uses DeepSpeedCPUAdam) come
# after the GPU-only rows so the builds overlap with measurements.
SWEEP1: list[Config] = [
    # job A: 1.1B full fine-tune, 16 x 2048 tokens per optimizer step (the speed model's main group)
    _c("a-s2-mb8-ga2", "llama-1.1b", group="A", stage=2, micro_batch=8, grad_accum=2, seq_len=2048),
    _c("a-s2-mb16", "llama-1.1b", group="A", stage=2, micro_batch=16, grad_accum=1, seq_len=2048),
    _c("a-s2-mb4-ga4", "llama-1.1b", group="A", stage=2, micro_batch=4, grad_accum=4, seq_len=2048),
    _c("a-s2-mb16-ckpt", "llama-1.1b", group="A", stage=2, micro_batch=16, seq_len=2048, grad_ckpt=True),
    _c("a-s3-mb8-ga2", "llama-1.1b", group="A", stage=3, micro_batch=8, grad_accum=2, seq_len=2048),
    _c("a-s1-mb8-ga2", "llama-1.1b", group="A", stage=1, micro_batch=8, grad_accum=2, seq_len=2048),
    # 128k vocabulary: logits dominate
    _c("v-s2-mb4-s2048", "llama-1b-128k", stage=2, micro_batch=4, seq_len=2048),
    _c("v-s3-mb2-s4096-ckpt", "llama-1b-128k", stage=3, micro_batch=2, seq_len=4096, grad_ckpt=True),
    _c("v-s1-fp16-mb4", "llama-1b-128k", stage=1, precision="fp16", micro_batch=4, seq_len=1024),
    _c("v-lora-all-s2-mb8-ckpt", "llama-1b-128k", stage=2, method="lora", lora_r=64, lora_targets=ALL_LINEAR,
       micro_batch=8, seq_len=1024, grad_ckpt=True),
    # 7B: LoRA at full depth, full fine-tunes at 7B width and 8 layers
    _c("l7-lora-s2-mb4", "llama-7b", group="L7", stage=2, method="lora", micro_batch=4, seq_len=2048),
    _c("l7-lora-s2-mb8-ckpt", "llama-7b", group="L7", stage=2, method="lora", micro_batch=8, seq_len=2048,
       grad_ckpt=True),
    _c("l7-lora-s3-mb4", "llama-7b", group="L7", stage=3, method="lora", micro_batch=4, seq_len=2048),
    _c("w8-s2-mb4", "llama-7b-l8", stage=2, micro_batch=4, seq_len=2048),
    _c("w8-s3-mb4-ckpt", "llama-7b-l8", stage=3, micro_batch=4, seq_len=2048, grad_ckpt=True),
    # 3B, 128k vocabulary
    _c("b3-s2-mb2", "llama-3b-128k", stage=2, micro_batch=2, seq_len=2048),
    _c("b3-s3-mb4-ckpt", "llama-3b-128k", stage=3, micro_batch=4, seq_len=2048, grad_ckpt=True),
    _c("b3-lora-s3-mb4", "llama-3b-128k", stage=3, method="lora", micro_batch=4, seq_len=2048),
    # small model: precisions, eager attention, fp32
    _c("s-s2-fp16-mb8", "llama-0.1b", stage=2, precision="fp16", micro_batch=8, seq_len=512),
    _c("s-s3-mb8", "llama-0.1b", stage=3, micro_batch=8, seq_len=1024),
    _c("s-s2-fp32-mb4", "llama-0.1b", stage=2, precision="fp32", micro_batch=4, seq_len=512),
    _c("s-s2-eager-mb4", "llama-0.1b", stage=2, attention="eager", micro_batch=4, seq_len=1024),
    # stage 0 (FusedAdam, built in the background)
    _c("s-s0-mb4", "llama-0.1b", stage=0, micro_batch=4, seq_len=1024),
    _c("s-s0-fp16-mb4", "llama-0.1b", stage=0, precision="fp16", micro_batch=4, seq_len=1024),
    _c("a-s0-mb8-ga2", "llama-1.1b", group="A", stage=0, micro_batch=8, grad_accum=2, seq_len=2048),
    # CPU offload (DeepSpeedCPUAdam, built in the background)
    _c("a-s2-cpu-mb16-ckpt", "llama-1.1b", group="A", stage=2, micro_batch=16, seq_len=2048, grad_ckpt=True, **CPU),
    _c("a-s3-cpu2-mb16-ckpt", "llama-1.1b", group="A", stage=3, micro_batch=16, seq_len=2048, grad_ckpt=True,
       **CPU_BOTH),
    _c("w8-s1-cpu-mb2", "llama-7b-l8", stage=1, micro_batch=2, seq_len=2048, **CPU),
    _c("w8-s3-cpu2-mb4-ckpt", "llama-7b-l8", stage=3, micro_batch=4, seq_len=1024, grad_ckpt=True, **CPU_BOTH),
]

MLP = ["gate_proj", "up_proj", "down_proj"]

# Sweep 2: verification. Calibration ended with sweep 1; these rows were chosen before they ran:
# the recommender's first choices (and runners-up) for job A (1.1B full, 16 x 2048 tokens a step) and
# job C (3B full, 8 x 2048) at GPU sizes 141/80/48/32/24 GiB, and configurations sweep 1 did not have
# (stage-3 optimizer offload, LoRA without dropout, MLP-only LoRA, fp16 stage 3, 8k sequence, an
# uncalibrated shape, unpinned offload, eager attention with GQA, stage-0 LoRA).
SWEEP2: list[Config] = [
    _c("a-s1-mb16", "llama-1.1b", steps=4, group="A", stage=1, micro_batch=16, seq_len=2048),
    _c("c-s2-mb4-ga2", "llama-3b-128k", steps=4, group="C", stage=2, micro_batch=4, grad_accum=2, seq_len=2048),
    _c("v-lora-d0-s2-mb8", "llama-1b-128k", stage=2, method="lora", lora_dropout=0.0, micro_batch=8, seq_len=1024),
    _c("b3-lora-mlp-s2-mb4", "llama-3b-128k", stage=2, method="lora", lora_targets=MLP, micro_batch=4,
       seq_len=2048),
    _c("a-s2-mb1-s8192-ckpt", "llama-1.1b", stage=2, micro_batch=1, seq_len=8192, grad_ckpt=True),
    _c("n-s2-mb4", "llama-2b-49k", stage=2, micro_batch=4, seq_len=2048),
    _c("a-s2-eager-mb4-s1024", "llama-1.1b", stage=2, attention="eager", micro_batch=4, seq_len=1024),
    _c("w8-s2-mb8-s4096-ckpt", "llama-7b-l8", stage=2, micro_batch=8, seq_len=4096, grad_ckpt=True),
    _c("v-s3-fp16-mb4", "llama-1b-128k", steps=4, stage=3, precision="fp16", micro_batch=4, seq_len=2048),
    _c("n-s3-lora-all-r32-mb4-ckpt", "llama-2b-49k", steps=4, stage=3, method="lora", lora_r=32,
       lora_targets=ALL_LINEAR, micro_batch=4, seq_len=2048, grad_ckpt=True),
    _c("c-s3-mb4-ga2-ckpt", "llama-3b-128k", steps=4, group="C", stage=3, micro_batch=4, grad_accum=2,
       seq_len=2048, grad_ckpt=True),
    # stage 0: FusedAdam
    _c("a-s0-mb4-ga4", "llama-1.1b", steps=4, group="A", stage=0, micro_batch=4, grad_accum=4, seq_len=2048),
    _c("a-s0-mb16", "llama-1.1b", steps=4, group="A", stage=0, micro_batch=16, seq_len=2048),
    _c("a-s0-mb16-ckpt", "llama-1.1b", steps=4, group="A", stage=0, micro_batch=16, seq_len=2048, grad_ckpt=True),
    _c("c-s0-mb4-ga2", "llama-3b-128k", steps=4, group="C", stage=0, micro_batch=4, grad_accum=2, seq_len=2048),
    _c("v-s0-lora-mb4", "llama-1b-128k", stage=0, method="lora", micro_batch=4, seq_len=2048),
    # CPU offload: DeepSpeedCPUAdam, one fresh process each
    _c("a-s2-cpu-mb8-ga2-ckpt", "llama-1.1b", steps=4, group="A", stage=2, micro_batch=8, grad_accum=2,
       seq_len=2048, grad_ckpt=True, **CPU),
    _c("a-s3-cpu-mb8-ga2", "llama-1.1b", steps=4, group="A", stage=3, micro_batch=8, grad_accum=2, seq_len=2048,
       **CPU),
    _c("a-s2-cpu-nopin-mb8-ckpt", "llama-1.1b", stage=2, micro_batch=8, seq_len=2048, grad_ckpt=True,
       pin_memory=False, **CPU),
    _c("n-s1-cpu-mb4-ckpt", "llama-2b-49k", stage=1, micro_batch=4, seq_len=2048, grad_ckpt=True, **CPU),
]

# Sweep 3: held out for the first step's room (core/estimate/margin.py, first_step_term), chosen on
# 2026-12-03 before they ran to straddle the rule's threshold: by the estimator, what step 0's optimizer
# step creates is 0.73-1.06 of what its forward and backward freed (the rule: at most 0.9 fits).
SWEEP3: list[Config] = [
    _c("h-a-s1-mb2-s4096-ga2", "llama-1.1b", stage=1, micro_batch=2, grad_accum=2, seq_len=4096),
    _c("h-a-s2-mb2-s4096", "llama-1.1b", stage=2, micro_batch=2, seq_len=4096),
    _c("h-a-s2-fp16-mb8-s4096-ckpt", "llama-1.1b", stage=2, precision="fp16", micro_batch=8, seq_len=4096,
       grad_ckpt=True),
    _c("h-w8-s2-mb4-s4096", "llama-7b-l8", stage=2, micro_batch=4, seq_len=4096),
    _c("h-v-s2-mb2-s4096-ga2-ckpt", "llama-1b-128k", stage=2, micro_batch=2, grad_accum=2, seq_len=4096,
       grad_ckpt=True),
    _c("h-n-s2-mb8-s4096-ckpt", "llama-2b-49k", stage=2, micro_batch=8, seq_len=4096, grad_ckpt=True),
    _c("h-v-s2-mb1-s4096-ga2", "llama-1b-128k", stage=2, micro_batch=1, grad_accum=2, seq_len=4096),
    _c("h-v-s2-mb4-s2048-ckpt", "llama-1b-128k", stage=2, micro_batch=4, seq_len=2048, grad_ckpt=True),
]

DRY: list[Config] = [
    _c("dry-s2-mb2", "dry-a", steps=2, stage=2, micro_batch=2, seq_len=64),
    _c("dry-s3-ckpt", "dry-b", steps=2, stage=3, micro_batch=2, seq_len=64, grad_ckpt=True, grad_accum=2),
    _c("dry-lora-s2", "dry-a", steps=2, stage=2, method="lora", micro_batch=2, seq_len=64),
    _c("dry-s0", "dry-a", steps=2, stage=0, micro_batch=2, seq_len=32),
    _c("dry-s1-cpu", "dry-a", steps=2, stage=1, micro_batch=2, seq_len=32, **CPU),
    _c("dry-s3-cpu2-lora", "dry-b", steps=2, stage=3, method="lora", micro_batch=2, seq_len=32, **CPU_BOTH),
    _c("dry-eager-fp32", "dry-a", steps=2, stage=2, precision="fp32", attention="eager", micro_batch=2,
       seq_len=32),
]

#: Sweep 4 (2026-12-03, fifth session): rows of sweeps 1-3 again, now that zerotui (and worker.py) make
#: Adam's state before the first step (core/train/optimizer_state.py). Every row whose first step grew
#: the segment with the state made lazily, and seven whose step fitted, as controls. Predicted before
#: they ran (benchmarks/results/estimator-sweep4-predictions-2026-12-03.txt).
SWEEP4_IDS = (
    # grew at the first step (sweeps 1-3, per-phase figures)
    "v-s1-fp16-mb4", "w8-s2-mb4", "w8-s3-mb4-ckpt", "b3-s2-mb2", "b3-s3-mb4-ckpt", "c-s2-mb4-ga2",
    "a-s2-mb1-s8192-ckpt", "n-s2-mb4", "w8-s2-mb8-s4096-ckpt", "h-v-s2-mb2-s4096-ga2-ckpt",
    "h-n-s2-mb8-s4096-ckpt", "h-v-s2-mb1-s4096-ga2", "h-v-s2-mb4-s2048-ckpt",
    # fitted
    "a-s2-mb8-ga2", "a-s2-mb16-ckpt", "a-s3-mb8-ga2", "v-s3-mb2-s4096-ckpt", "h-a-s1-mb2-s4096-ga2",
    "h-w8-s2-mb4-s4096", "s-s2-fp16-mb8",
)
_BY_ID = {c.id: c for c in SWEEP1 + SWEEP2 + SWEEP3}
SWEEP4: list[Config] = [_BY_ID[i] for i in SWEEP4_IDS]

SWEEPS: dict[str, list[Config]] = {"sweep1": SWEEP1, "sweep2": SWEEP2, "sweep3": SWEEP3, "sweep4": SWEEP4,
                                   "dry": DRY}


def needs_op(cfg: Config) -> str:
    """Which JIT-built DeepSpeed op a configuration needs ('' when none)."""
    p = cfg.plan
    if p.get("offload_optimizer", "none") != "none":
        return "cpu_adam"
    if p.get("stage", 2) == 0:
        return "fused_adam"
    return ""
