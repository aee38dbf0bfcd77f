"""LLaMA-Factory and axolotl training YAML as the start of a plan (`zerotui import`, `--plan FILE`): each
key maps to its Plan field or gets one warning saying what happens instead; any other file is refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from zerotui.core.deepspeed.peers import import_training_config, peer_plan
from zerotui.core.errors import ConfigImportError

# Written for these tests in the shape of LLaMA-Factory's examples/train_lora/*.yaml.
LF_LORA = """\
### model
model_name_or_path: tiny
trust_remote_code: false

### method
stage: sft
do_train: true
finetuning_type: lora
lora_rank: 16
lora_alpha: 24
lora_dropout: 0.1
lora_target: q_proj,v_proj
deepspeed: ds_z3_offload.json

### dataset
dataset: my_rows
dataset_dir: lf_data
template: qwen
cutoff_len: 256
max_samples: 500
overwrite_cache: true

### output
output_dir: saves/tiny-lora
logging_steps: 5
save_steps: 50
report_to: tensorboard

### train
per_device_train_batch_size: 2
gradient_accumulation_steps: 4
learning_rate: 1e-4
num_train_epochs: 2.0
max_steps: 40
lr_scheduler_type: linear
warmup_ratio: 0.1
weight_decay: 0.01
max_grad_norm: 0.5
bf16: true
"""

LF_QLORA = """\
model_name_or_path: tiny
stage: sft
finetuning_type: lora
quantization_bit: 4
quantization_method: bnb
double_quantization: false
dataset: rows.jsonl
fp16: true
disable_gradient_checkpointing: true
"""

# The "auto" placeholders of the HF Trainer, as DeepSpeed files shipped with these tools have them.
DS_Z3_OFFLOAD = {
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto", "bf16": {"enabled": "auto"},
    "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 12},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True},
                          "offload_param": {"device": "cpu", "pin_memory": True}, "overlap_comm": False,
                          "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                          "stage3_param_persistence_threshold": "auto",
                          "stage3_gather_16bit_weights_on_model_save": True},
}

# In the shape of axolotl's examples/*/lora.yml and qlora.yml.
AX_LORA = """\
base_model: tiny
model_type: AutoModelForCausalLM
load_in_8bit: false
datasets:
  - path: chats.jsonl
    type: chat_template
    field_messages: dialog
val_set_size: 0.02
output_dir: ./outputs/out
adapter: lora
sequence_len: 384
sample_packing: true
lora_r: 32
lora_alpha: 64
lora_dropout: 0.0
lora_target_modules:
  - q_proj
  - k_proj
wandb_project:
gradient_accumulation_steps: 3
micro_batch_size: 2
num_epochs: 4
optimizer: adamw_torch
lr_scheduler: constant
learning_rate: 0.0003
warmup_steps: 7
bf16: auto
gradient_checkpointing: true
flash_attention: true
"""

AX_QLORA = """\
base_model: tiny
load_in_4bit: true
adapter: qlora
lora_r: 8
lora_target_linear: true
bnb_config_kwargs:
  bnb_4bit_quant_type: fp4
datasets:
  - path: chats.jsonl
    type: alpaca
micro_batch_size: 1
optimizer: paged_adamw_8bit
fp16: true
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def lf_dir(tmp_path, monkeypatch):
    """A LLaMA-Factory working folder: the YAML, its DeepSpeed file, a data folder with dataset_info.json."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "lf_lora.yaml", LF_LORA)
    write(tmp_path, "lf_qlora.yaml", LF_QLORA)
    write(tmp_path, "ds_z3_offload.json", json.dumps(DS_Z3_OFFLOAD))
    write(tmp_path, "lf_data/rows.jsonl", '{"instruction": "hi", "input": "", "output": "hello"}\n')
    write(tmp_path, "lf_data/dataset_info.json", json.dumps({"my_rows": {"file_name": "rows.jsonl"}}))
    write(tmp_path, "rows.jsonl", '{"instruction": "hi", "input": "", "output": "hello"}\n')
    write(tmp_path, "chats.jsonl", '{"dialog": [{"role": "user", "content": "a"}, {"role": "assistant", '
          '"content": "b"}]}\n')
    return tmp_path


def keyed(warnings: list[str], key: str) -> list[str]:
    return [w for w in warnings if w.startswith((f"{key}=", f"{key}:"))]


def test_llamafactory_lora_maps_onto_the_plan(lf_dir):
    r = import_training_config(lf_dir / "lf_lora.yaml")
    p = r.plan
    assert r.source_format == "LLaMA-Factory" and p.name == "lf_lora"
    assert (p.model, p.method, p.lora_r, p.lora_alpha, p.lora_dropout) == ("tiny", "lora", 16, 24, 0.1)
    assert p.lora_targets == ["q_proj", "v_proj"]
    assert (p.micro_batch, p.grad_accum, p.seq_len, p.max_samples) == (2, 4, 256, 500)
    assert (p.lr, p.lr_schedule, p.epochs, p.max_steps, p.weight_decay, p.grad_clip) == (
        1e-4, "linear", 2.0, 40, 0.01, 0.5)
    assert p.warmup_steps == 4  # warmup_ratio 0.1 of max_steps 40
    assert (p.precision, p.grad_ckpt, p.tensorboard) == ("bf16", True, True)  # LLaMA-Factory checkpoints by default
    assert (p.log_interval, p.save_interval) == (5, 50)
    # dataset_dir/dataset_info.json names the file; LLaMA-Factory's default formatting is alpaca.
    assert (p.data, p.data_format) == (str(lf_dir / "lf_data" / "rows.jsonl"), "alpaca")
    # The DeepSpeed file's ZeRO part, through the ds_config import.
    assert (p.stage, p.offload_optimizer, p.offload_params, p.overlap_comm) == (3, "cpu", "cpu", False)
    assert p.fp16_initial_scale_power == 12
    assert p.ds_overrides["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True
    # What the HF Trainer fills from the YAML ("auto") is no warning.
    assert not [w for w in r.warnings if "auto" in w], r.warnings
    for key in ("template", "overwrite_cache", "output_dir"):
        assert len(keyed(r.warnings, key)) == 1, (key, r.warnings)
    # and nothing else: every other key carried over; val_size is LLaMA-Factory's 0 (zerotui's is 0.05)
    assert r.warnings[3:] == ["not in the file, so LLaMA-Factory's own defaults are used: val_size=0.0"], r.warnings
    assert r.plan.eval_fraction == 0.0


def test_llamafactory_qlora_uses_its_own_defaults(lf_dir):
    r = import_training_config(lf_dir / "lf_qlora.yaml")
    p = r.plan
    assert (p.method, p.quant_bits, p.double_quant, p.precision, p.grad_ckpt) == ("qlora", 4, False, "fp16", False)
    assert p.data == str(lf_dir / "rows.jsonl") and p.data_format == "auto"
    # LLaMA-Factory's defaults where the file is silent: rank 8, alpha 2 × rank, every linear layer, ...
    assert (p.lora_r, p.lora_alpha, p.lora_dropout, p.micro_batch, p.epochs, p.lr, p.seq_len) == (
        8, 16, 0.0, 8, 3.0, 5e-5, 2048)
    assert p.lora_targets == ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]
    assert (p.lr_schedule, p.eval_fraction, p.stage) == ("linear", 0.0, 2)
    defaults = [w for w in r.warnings if "defaults are used" in w]
    assert len(defaults) == 1 and "per_device_train_batch_size=8" in defaults[0] and "lora_target=all" in defaults[0]


def test_axolotl_lora_maps_onto_the_plan(lf_dir):
    r = import_training_config(write(lf_dir, "ax_lora.yml", AX_LORA))
    p = r.plan
    assert r.source_format == "axolotl"
    assert (p.model, p.method, p.lora_r, p.lora_alpha, p.lora_dropout) == ("tiny", "lora", 32, 64, 0.0)
    assert p.lora_targets == ["q_proj", "k_proj"]
    assert (p.micro_batch, p.grad_accum, p.seq_len, p.packing, p.epochs) == (2, 3, 384, True, 4.0)
    assert (p.lr, p.lr_schedule, p.warmup_steps, p.eval_fraction) == (3e-4, "constant", 7, 0.02)
    assert (p.precision, p.grad_ckpt, p.attention) == ("bf16", True, "flash")
    assert (p.data, p.data_format, p.messages_field) == (str(lf_dir / "chats.jsonl"), "chat", "dialog")
    assert [w.split(":")[0] for w in r.warnings] == ["output_dir='./outputs/out'", "bf16=auto"], r.warnings


def test_axolotl_qlora_maps_onto_the_plan(lf_dir):
    r = import_training_config(write(lf_dir, "ax_qlora.yaml", AX_QLORA))
    p = r.plan
    assert (p.method, p.quant_bits, p.quant_type, p.lora_r, p.precision) == ("qlora", 4, "fp4", 8, "fp16")
    assert p.lora_targets == ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]
    assert (p.data_format, p.micro_batch, p.grad_ckpt) == ("alpaca", 1, False)
    assert len(keyed(r.warnings, "optimizer")) == 1 and "8-bit" in keyed(r.warnings, "optimizer")[0]
    # An 8-bit base with a LoRA adapter is zerotui's 8-bit QLoRA.
    eight = import_training_config(write(lf_dir, "ax8.yml", "base_model: tiny\nadapter: lora\nload_in_8bit: true\n"))
    assert (eight.plan.method, eight.plan.quant_bits) == ("qlora", 8)


@pytest.mark.parametrize("text, name", [
    (LF_QLORA + "lora_rnak: 4\nfrobnicate: 3\nplot_loss: true\nlogging_dir: x\n", "lf.yaml"),
    (AX_QLORA + "lora_rr: 4\nfrobnicate: 3\nspecial_tokens: {pad_token: x}\nlogging_dir: x\n", "ax.yml"),
])
def test_each_key_not_carried_over_warns_once(lf_dir, text, name):
    r = import_training_config(write(lf_dir, name, text))
    unknown = [k for k in ("lora_rnak", "lora_rr", "frobnicate", "logging_dir") if f"\n{k}:" in text]
    for key in unknown:
        found = keyed(r.warnings, key)
        assert len(found) == 1 and "not carried over" in found[0], (key, r.warnings)
    typo = next(k for k in ("lora_rnak", "lora_rr") if k in unknown)
    assert "did you mean 'lora_r" in keyed(r.warnings, typo)[0]
    known = "plot_loss" if name == "lf.yaml" else "special_tokens"
    assert len(keyed(r.warnings, known)) == 1
    assert len(set(r.warnings)) == len(r.warnings)


def test_the_deepspeed_file_explicit_values_and_a_missing_file(lf_dir):
    ds = {**DS_Z3_OFFLOAD, "train_micro_batch_size_per_gpu": 16, "scheduler": {"type": "WarmupCosineLR"}}
    write(lf_dir, "ds_z3_offload.json", json.dumps(ds))
    r = import_training_config(lf_dir / "lf_lora.yaml")
    assert r.plan.micro_batch == 2 and r.plan.lr_schedule == "cosine"  # the YAML's batch, DeepSpeed's scheduler
    assert [w for w in r.warnings if "train_micro_batch_size_per_gpu" in w and "YAML" in w]
    (lf_dir / "ds_z3_offload.json").unlink()
    r = import_training_config(lf_dir / "lf_lora.yaml")
    assert r.plan.stage == 2 and len(keyed(r.warnings, "deepspeed")) == 1


@pytest.mark.parametrize("text, message", [
    (LF_QLORA.replace("stage: sft", "stage: dpo"), "stage: dpo"),
    (LF_QLORA.replace("finetuning_type: lora", "finetuning_type: full"), "quantization_bit: 4 with finetuning_type full"),
    (AX_QLORA.replace("adapter: qlora", "adapter: ia3"), "adapter: ia3"),
    (AX_QLORA + "rl: dpo\n", "rl: dpo"),
])
def test_training_a_zerotui_plan_cannot_express_is_refused(lf_dir, text, message):
    with pytest.raises(ConfigImportError, match=message):
        import_training_config(write(lf_dir, "x.yaml", text))


PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"


@pytest.mark.parametrize("name, text, seen", [
    ("passwd", PASSWD, "saw text, starting 'root:x:0:0:root:/root:/bin/bash'"),
    ("random.yaml", "colour: blue\nsizes: [1, 2]\n", "saw a mapping of colour, sizes"),
    ("list.yml", "- a\n- b\n", "saw a YAML list"),
    ("notds.json", '{"colour": "blue"}', "none of its keys (colour) is a DeepSpeed setting"),
    ("plan.yaml", "model: tiny\nmicro_batch: 2\n", "already a zerotui plan"),
])
def test_a_file_that_is_no_training_config_is_refused_naming_what_was_seen(zerotui_cli, tmp_path, name, text, seen):
    write(tmp_path, name, text)
    r = zerotui_cli("import", name, "-o", "out.yaml")
    assert r.returncode == 2 and not (tmp_path / "out.yaml").exists(), (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and seen in lines[0] and "Traceback" not in r.stderr, r.stderr


def test_the_real_etc_passwd_is_refused(zerotui_cli):
    if not Path("/etc/passwd").is_file():
        pytest.skip("no /etc/passwd here")
    r = zerotui_cli("import", "/etc/passwd")
    assert r.returncode == 2 and "/etc/passwd" in r.stderr and "model: tiny" not in r.stdout


def test_cli_import_writes_the_plan_and_one_line_per_warning(zerotui_cli, lf_dir):
    r = zerotui_cli("import", "lf_lora.yaml", "-o", "plan.yaml", "--micro-batch", "1", cwd=lf_dir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("warning: template=") == 1 and "wrote plan.yaml" in r.stdout
    from zerotui.core.plan.schema import load_plan
    plan = load_plan(lf_dir / "plan.yaml")
    assert (plan.micro_batch, plan.grad_accum, plan.stage) == (1, 4, 3)  # the option wins over the file
    out = json.loads(zerotui_cli("import", "lf_lora.yaml", "--json", cwd=lf_dir).stdout)
    assert out["format"] == "LLaMA-Factory" and out["plan"]["lora_r"] == 16


def test_estimate_reads_a_llamafactory_yaml_with_plan(zerotui_cli, lf_dir):
    r = zerotui_cli("estimate", "--plan", "lf_lora.yaml", "--json", "--gpu-mem", "24GiB", "--ram", "64GiB",
                    cwd=lf_dir)
    assert r.returncode == 0, r.stderr
    assert "warning: template=" in r.stderr
    same = zerotui_cli("estimate", "--json", "--gpu-mem", "24GiB", "--ram", "64GiB", "--model", "tiny",
                       "--method", "lora", "--lora-r", "16", "--lora-alpha", "24", "--lora-targets", "q_proj,v_proj",
                       "--micro-batch", "2", "--grad-accum", "4", "--seq-len", "256", "--grad-ckpt",
                       "--precision", "bf16", "--stage", "3", "--offload-optimizer", "cpu", "--offload-params", "cpu",
                       cwd=lf_dir)
    got, want = json.loads(r.stdout), json.loads(same.stdout)
    for key in ("gpu_bytes", "cpu_bytes", "params_trainable", "world_size"):
        assert got[key] == want[key], key


def test_plan_files_that_are_not_peer_yaml_are_left_to_the_plan_reader(lf_dir):
    assert peer_plan(write(lf_dir, "plan.yaml", "model: tiny\n")) is None
    assert peer_plan(lf_dir / "missing.yaml") is None
    assert peer_plan(lf_dir / "lf_lora.yaml").plan.lora_r == 16


def test_ds_config_files_still_import_as_before(lf_dir):
    r = import_training_config(lf_dir / "ds_z3_offload.json")
    assert r.source_format == "ds_config" and r.plan.stage == 3 and r.plan.model == "tiny"
