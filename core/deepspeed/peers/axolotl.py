"""axolotl's training YAML (``axolotl train x.yml``, its examples/*/*.yml) -> Plan fields. Empty keys (its
examples list many, ``wandb_project:``) set nothing, in axolotl or here.
"""
from __future__ import annotations

from typing import Any

from zerotui.core.deepspeed.peers.mapper import PeerMapper
from zerotui.core.deepspeed.peers.sniff import AXOLOTL

_ADAMW = ("adamw_torch", "adamw_hf", "adamw_torch_fused", "adamw")
_SAME_LOADER = ("AutoModelForCausalLM", "AutoTokenizer", "LlamaForCausalLM", "LlamaTokenizer")
#: datasets[].type -> the Plan's data_format
_FORMATS = {"alpaca": "alpaca", "completion": "text", "chat_template": "chat", "sharegpt": "chat"}
NOTES = {
    "output_dir": "zerotui writes checkpoints and final/ into the run's folder (runs/<time>-<name>/)",
    "dataset_prepared_path": "zerotui caches tokenised data in its own cache folder",
    "chat_template": "zerotui formats prompts with the model tokenizer's own chat template",
    "special_tokens": "the tokenizer's own special tokens are used",
    "tokens": "the tokenizer's own vocabulary is used (no tokens are added)",
    "pad_to_sequence_len": "zerotui pads each batch to its longest row",
    "eval_sample_packing": "evaluation batches are packed like training ones (--packing)",
    "evals_per_epoch": "zerotui evaluates every eval_interval steps and at the end (--eval-interval)",
    "saves_per_epoch": "zerotui checkpoints every save_interval steps and save_minutes (--save-interval)",
    "resume_from_checkpoint": "continue a zerotui run with zerotui resume RUN",
    "lora_model_dir": "zerotui starts new adapters; merge the old one into the base first (zerotui merge)",
    "lora_modules_to_save": "only the LoRA adapters train (no extra trainable modules)",
    "test_datasets": "zerotui evaluates on eval_fraction of the training data (--eval-fraction)",
    "fsdp": "zerotui shards with DeepSpeed ZeRO (the DeepSpeed file, or --stage 3)",
    "fsdp_config": "zerotui shards with DeepSpeed ZeRO (the DeepSpeed file, or --stage 3)",
    "wandb_entity": "wandb uses your logged-in default entity", "wandb_name": "the wandb run is named after the run",
    "wandb_watch": "zerotui logs losses, not gradients, to wandb", "wandb_log_model": "models stay in the run folder",
    "xformers_attention": "the plan uses sdpa (PyTorch's fused attention)",
    "gradient_checkpointing_kwargs": "zerotui checkpoints each layer with the model's own settings",
    "base_model_config": "the model's config is read from the model itself",
}
_OFF = {"lora_fan_in_fan_out": "zerotui's adapters follow the layers' own layout",
        "peft_use_dora": "the plan trains plain LoRA", "peft_use_rslora": "the plan scales adapters by alpha/r",
        "train_on_inputs": "zerotui trains on the answers only", "strict": "", "group_by_length": "zerotui shuffles rows",
        "tf32": "zerotui leaves PyTorch's TF32 setting alone (off for matmuls)"}


class AxolotlMapper(PeerMapper):
    tool = AXOLOTL
    notes = NOTES

    def register(self) -> None:
        f, n = self.field, self.number
        self.raw: dict[str, Any] = {}
        self.handlers = {
            "base_model": f("model", str), "trust_remote_code": f("trust_remote_code"),
            "model_type": self.loader, "tokenizer_type": self.loader, "rl": self.rl,
            "lora_r": f("lora_r", n), "lora_alpha": f("lora_alpha", n), "lora_dropout": f("lora_dropout", n),
            "bnb_config_kwargs": self.bnb_kwargs, "val_set_size": f("eval_fraction", n),
            "sequence_len": f("seq_len", n), "sample_packing": f("packing"),
            "micro_batch_size": f("micro_batch", n), "gradient_accumulation_steps": f("grad_accum", n),
            "num_epochs": f("epochs", n), "max_steps": self.max_steps, "optimizer": self.optimizer,
            "lr_scheduler": self.schedule, "cosine_min_lr_ratio": f("min_lr_ratio", n),
            "learning_rate": f("lr", n), "warmup_steps": f("warmup_steps", n), "weight_decay": f("weight_decay", n),
            "max_grad_norm": f("grad_clip", n), "adam_beta1": f("adam_beta1", n), "adam_beta2": f("adam_beta2", n),
            "adam_epsilon": f("adam_eps", n), "flash_attention": self.attention("flash"),
            "sdp_attention": self.attention("sdpa"), "eager_attention": self.attention("eager"),
            "logging_steps": f("log_interval", n), "save_steps": f("save_interval", n),
            "eval_steps": f("eval_interval", n), "save_total_limit": f("keep_checkpoints", n), "seed": f("seed", n),
            "deepspeed": self.deepspeed, "wandb_project": lambda k, v: self.fields.__setitem__("wandb", True),
            "use_tensorboard": f("tensorboard"), "plugins": self.plugins,
            **{k: self.off(k, why) for k, why in _OFF.items()},
        }
        for key in ("adapter", "load_in_4bit", "load_in_8bit", "lora_target_modules", "lora_target_linear",
                    "datasets", "bf16", "fp16", "bfloat16", "float16", "gradient_checkpointing", "warmup_ratio",
                    "batch_size"):
            self.handlers[key] = lambda k, v: self.raw.__setitem__(k, v)

    def off(self, key: str, why: str):
        return lambda k, v: None if self.flag(v) is False else self.not_carried(k, why or "zerotui has no such mode", v)

    def loader(self, key: str, value: Any) -> None:
        if str(value) not in _SAME_LOADER:
            self.not_carried(key, "zerotui loads the model with AutoModelForCausalLM and its AutoTokenizer", value)

    def rl(self, key: str, value: Any) -> None:
        self.refuse(f"rl: {value} (axolotl's preference / RL training) has no zerotui equivalent",
                    "zerotui fine-tunes on examples: remove rl: to train supervised")

    def attention(self, kind: str):
        def handle(key: str, value: Any) -> None:
            if self.flag(value):
                self.fields["attention"] = kind
        return handle

    def optimizer(self, key: str, value: Any) -> None:
        if str(value) not in _ADAMW:
            self.not_carried(key, "zerotui trains with DeepSpeed's AdamW (32-bit states: more memory than an 8-bit "
                             "or paged optimizer)", value)

    def bnb_kwargs(self, key: str, value: Any) -> None:
        for k, v in (value.items() if isinstance(value, dict) else [("", value)]):
            if k == "bnb_4bit_quant_type":
                self.set(f"{key}.{k}", "quant_type", v)
            elif k == "bnb_4bit_use_double_quant":
                self.set(f"{key}.{k}", "double_quant", v)
            else:
                self.not_carried(f"{key}.{k}" if k else key, "zerotui sets the other bitsandbytes options itself", v)

    def plugins(self, key: str, value: Any) -> None:
        for name in value if isinstance(value, list) else [value]:
            if "liger" in str(name).lower():
                self.fields["kernels"] = "liger"
            else:
                self.not_carried(f"{key}: {name}", "zerotui has no plugins")

    # -- keys read together ------------------------------------------------------------------------
    def finish(self) -> None:
        raw = self.raw
        self.method(raw.get("adapter"), self.flag(raw.get("load_in_4bit")), self.flag(raw.get("load_in_8bit")))
        if self.fields["method"] != "full":
            self.targets("lora_target_modules", raw.get("lora_target_modules") or [],
                         all_linear=bool(self.flag(raw.get("lora_target_linear"))))
            if not raw.get("lora_target_modules") and not self.flag(raw.get("lora_target_linear")):
                self.warn("neither lora_target_modules nor lora_target_linear is set; the plan keeps zerotui's "
                          "targets (q_proj, k_proj, v_proj, o_proj)")
        self.precision(raw.get("bf16") or raw.get("bfloat16"), raw.get("fp16") or raw.get("float16"),
                       ("bf16", "fp16"))
        ckpt = raw.get("gradient_checkpointing", False)
        self.fields["grad_ckpt"] = ckpt not in (False, None) and self.flag(ckpt) is not False
        if isinstance(ckpt, str) and self.flag(ckpt) is None:
            self.not_carried("gradient_checkpointing", f"the plan checkpoints activations on the GPU (axolotl's "
                             f"{ckpt!r} variant is its own)", ckpt)
        if "batch_size" in raw:
            self.batch_size(self.number(raw["batch_size"]))
        if "warmup_ratio" in raw:
            self.warmup_ratio("warmup_ratio", raw["warmup_ratio"])
        self.fields.setdefault("eval_fraction", 0.0)  # axolotl's val_set_size defaults to 0: no held-out rows
        if raw.get("datasets"):
            self.datasets(raw["datasets"])

    def method(self, adapter: Any, four: Any, eight: Any) -> None:
        if adapter not in (None, "", "lora", "qlora"):
            self.refuse(f"adapter: {adapter} has no zerotui equivalent", "use adapter: lora or qlora, or none for a "
                        "full fine-tune")
        if adapter in (None, "") and (four or eight):
            self.refuse("load_in_4bit/load_in_8bit without an adapter: a quantised base trains adapters only",
                        "add adapter: qlora (4-bit) or adapter: lora (8-bit)")
        if adapter in (None, ""):
            self.fields["method"] = "full"
        elif four or eight or adapter == "qlora":
            self.fields.update(method="qlora", quant_bits=8 if eight and not four else 4)
        else:
            self.fields["method"] = "lora"

    def batch_size(self, total: Any) -> None:
        micro = int(self.fields.get("micro_batch", 1))
        if "gradient_accumulation_steps" in self.data or not isinstance(total, int) or total % micro:
            self.not_carried("batch_size", "micro_batch_size × gradient_accumulation_steps is what the plan keeps",
                             total)
        else:  # axolotl: gradient_accumulation_steps = batch_size // micro_batch_size
            self.set("batch_size", "grad_accum", total // micro)

    def datasets(self, value: Any) -> None:
        entries = value if isinstance(value, list) else [value]
        for i, extra in enumerate(entries[1:], 1):
            self.not_carried(f"datasets[{i}]", "zerotui trains on one data source; the plan uses datasets[0]",
                             extra.get("path") if isinstance(extra, dict) else extra)
        first = entries[0]
        if not isinstance(first, dict) or not first.get("path"):
            self.not_carried("datasets[0]", "it names no path; the plan keeps data: sample", first)
            return
        data = self.data_file("datasets[0].path", first["path"])
        if data is None:
            return
        self.fields["data"] = data
        kind = first.get("type")
        fmt = _FORMATS.get(str(kind).split(":")[0]) if isinstance(kind, str) else None
        if kind is not None and fmt is None:
            self.not_carried("datasets[0].type", "zerotui detects the format from the rows (--data-format to "
                             "choose: text, alpaca, chat, prompt_response)", kind)
        elif fmt:
            self.fields["data_format"] = fmt
        for k, v in first.items():
            if k in ("path", "type", "ds_type") or v in (None, "") or (k, v) == ("split", "train"):
                continue
            if k == "field" and fmt == "text":
                self.set("datasets[0].field", "text_field", v)
            elif k == "field_messages" and fmt == "chat":
                self.set("datasets[0].field_messages", "messages_field", v)
            else:
                self.not_carried(f"datasets[0].{k}", "zerotui reads the file's rows as they are (role/content or "
                                 "from/value messages)", v)
        if str(kind) == "sharegpt" and "field_messages" not in first:
            self.fields["messages_field"] = "conversations"
