"""LLaMA-Factory's training YAML (``llamafactory-cli train x.yaml``, its examples/train_*/*.yaml) -> Plan
fields. Its keys are the HF TrainingArguments plus LLaMA-Factory's model, data and finetuning arguments;
where the file leaves a key out, the value LLaMA-Factory (or the HF Trainer) would use is applied when it
differs from zerotui's default, and one line lists those.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from zerotui.core.deepspeed.peers.mapper import PeerMapper
from zerotui.core.deepspeed.peers.sniff import LLAMA_FACTORY
from zerotui.core.safe_read import DS_CONFIG_BYTES, load_json, read_text

_TRAINS = ("sft", "pt")
_ATTENTION = {"auto": "sdpa", "sdpa": "sdpa", "fa2": "flash", "disabled": "eager"}
_ADAMW = ("adamw_torch", "adamw_hf", "adamw_torch_fused", "adamw")
#: What LLaMA-Factory / the HF Trainer use for a key the file leaves out (where zerotui's default differs).
DEFAULTS = {"per_device_train_batch_size": 8, "num_train_epochs": 3.0, "learning_rate": 5e-5,
            "lr_scheduler_type": "linear", "cutoff_len": 2048, "lora_rank": 8, "lora_dropout": 0.0,
            "lora_target": "all", "val_size": 0.0}
NOTES = {
    "template": "zerotui formats prompts with the model tokenizer's own chat template (a plain ### Instruction "
                "layout without one)",
    "output_dir": "zerotui writes checkpoints and final/ into the run's folder (runs/<time>-<name>/)",
    "overwrite_output_dir": "every zerotui run gets a new folder",
    "overwrite_cache": "zerotui's tokenised cache is keyed by the data, tokenizer and settings",
    "preprocessing_num_workers": "zerotui tokenises in its own process pool",
    "dataloader_num_workers": "zerotui feeds batches from memory",
    "tokenized_path": "zerotui caches tokenised data in its own cache folder",
    "plot_loss": "the dashboard (zerotui attach) charts the loss",
    "save_only_model": "zerotui checkpoints hold the optimizer state too, so zerotui resume can continue",
    "ddp_timeout": "zerotui sets the process-group timeout itself",
    "resume_from_checkpoint": "continue a zerotui run with zerotui resume RUN",
    "eval_dataset": "zerotui evaluates on eval_fraction of the training data (--eval-fraction)",
    "per_device_eval_batch_size": "evaluation uses the training micro-batch",
    "eval_strategy": "zerotui evaluates every eval_interval steps and at the end",
    "save_strategy": "zerotui checkpoints every save_interval steps and save_minutes",
    "logging_strategy": "zerotui logs every log_interval steps",
    "adapter_name_or_path": "zerotui starts new adapters; merge the old one into the base first (zerotui merge)",
    "additional_target": "only the LoRA adapters train (no extra trainable modules)",
    "freeze_vision_tower": "zerotui trains text models",
    "image_max_pixels": "zerotui trains text models",
}
_OFF = {"use_dora": "the plan trains plain LoRA", "use_rslora": "the plan scales adapters by alpha/r (plain LoRA)",
        "pissa_init": "adapters start as PEFT's default (plain LoRA)", "use_unsloth": "zerotui trains with DeepSpeed",
        "use_galore": "the plan trains with AdamW", "use_badam": "the plan trains with AdamW",
        "use_apollo": "the plan trains with AdamW", "train_on_prompt": "zerotui trains on the answers only",
        "create_new_adapter": "zerotui starts new adapters anyway", "upcast_layernorm": "layers keep the run's dtype"}


class LlamaFactoryMapper(PeerMapper):
    tool = LLAMA_FACTORY
    notes = NOTES

    def register(self) -> None:
        f, n = self.field, self.number
        self.raw: dict[str, Any] = {}
        self.handlers = {
            "model_name_or_path": f("model", str), "trust_remote_code": f("trust_remote_code"),
            "stage": self.stage, "do_train": self.do_train,
            "lora_rank": f("lora_r", n), "lora_alpha": f("lora_alpha", n), "lora_dropout": f("lora_dropout", n),
            "quantization_type": f("quant_type"), "double_quantization": f("double_quant"),
            "quantization_method": self.quant_method, "flash_attn": self.attention,
            "enable_liger_kernel": lambda k, v: self.set(k, "kernels", "liger" if self.flag(v) else "none"),
            "cutoff_len": f("seq_len", n), "max_samples": f("max_samples", n), "val_size": self.val_size,
            "packing": f("packing"), "neat_packing": self.neat_packing,
            "logging_steps": f("log_interval", n), "save_steps": f("save_interval", n),
            "eval_steps": f("eval_interval", n), "save_total_limit": f("keep_checkpoints", n),
            "report_to": self.report_to, "per_device_train_batch_size": f("micro_batch", n),
            "gradient_accumulation_steps": f("grad_accum", n), "learning_rate": f("lr", n),
            "num_train_epochs": f("epochs", n), "max_steps": self.max_steps, "lr_scheduler_type": self.schedule,
            "lr_scheduler_kwargs": self.scheduler_kwargs, "warmup_steps": f("warmup_steps", n),
            "weight_decay": f("weight_decay", n), "max_grad_norm": f("grad_clip", n),
            "adam_beta1": f("adam_beta1", n), "adam_beta2": f("adam_beta2", n), "adam_epsilon": f("adam_eps", n),
            "optim": self.optim, "seed": f("seed", n), "deepspeed": self.deepspeed, "run_name": f("name", str),
            **{k: self.off(k, why) for k, why in _OFF.items()},
        }
        # Read together in finish(): they depend on each other or on the model.
        for key in ("finetuning_type", "quantization_bit", "lora_target", "dataset", "dataset_dir", "bf16",
                    "fp16", "pure_bf16", "gradient_checkpointing", "disable_gradient_checkpointing", "warmup_ratio"):
            self.handlers[key] = lambda k, v: self.raw.__setitem__(k, v)

    def off(self, key: str, why: str):
        return lambda k, v: None if self.flag(v) is False else self.not_carried(k, why, v)

    def stage(self, key: str, value: Any) -> None:
        if str(value) not in _TRAINS:
            self.refuse(f"stage: {value} (LLaMA-Factory's {value} training) has no zerotui equivalent",
                        "zerotui fine-tunes on examples (stage: sft) or plain text (stage: pt)")

    def do_train(self, key: str, value: Any) -> None:
        if self.flag(value) is not True:
            self.not_carried(key, "a zerotui plan is for training", value)

    def quant_method(self, key: str, value: Any) -> None:
        if str(value).lower() not in ("bnb", "bitsandbytes"):
            self.not_carried(key, "zerotui quantises the base with bitsandbytes", value)

    def attention(self, key: str, value: Any) -> None:
        if str(value) in _ATTENTION:
            self.fields["attention"] = _ATTENTION[str(value)]
        else:
            self.not_carried(key, "the plan uses sdpa (auto, sdpa, fa2 and disabled are understood)", value)

    def neat_packing(self, key: str, value: Any) -> None:
        if self.flag(value):
            self.fields["packing"] = True  # zerotui's packing never attends across samples, as neat_packing

    def val_size(self, key: str, value: Any) -> None:
        value = self.number(value)
        if isinstance(value, float) and value < 0.5:
            self.set(key, "eval_fraction", value)
        else:
            self.not_carried(key, "zerotui holds out a fraction of the rows below 0.5 (--eval-fraction); the plan "
                             "holds out none", value)

    def report_to(self, key: str, value: Any) -> None:
        names = value if isinstance(value, list) else [v.strip() for v in str(value).split(",")]
        for name in names:
            if name in ("tensorboard", "wandb"):
                self.fields[name] = True
            elif name not in ("none", "all"):
                self.not_carried(f"{key}: {name}", "zerotui logs to its events file, and to tensorboard/wandb on "
                                 "request")

    def scheduler_kwargs(self, key: str, value: Any) -> None:
        rest = dict(value) if isinstance(value, dict) else {"": value}
        if "min_lr_rate" in rest:
            self.set(f"{key}.min_lr_rate", "min_lr_ratio", self.number(rest.pop("min_lr_rate")))
        for k, v in rest.items():
            self.not_carried(f"{key}.{k}" if k else key, "the plan's schedule has only warm-up and min_lr_ratio", v)

    def optim(self, key: str, value: Any) -> None:
        if str(value) not in _ADAMW:
            self.not_carried(key, "zerotui trains with DeepSpeed's AdamW (32-bit states)", value)

    # -- keys read together ------------------------------------------------------------------------
    def finish(self) -> None:
        raw, data = self.raw, self.data
        self.method(str(raw.get("finetuning_type", "lora")), self.number(raw.get("quantization_bit")))
        adapters = self.fields["method"] != "full"
        applied = {k: v for k, v in DEFAULTS.items() if data.get(k) in (None, "") and (adapters or "lora" not in k)}
        for key, value in applied.items():
            if key != "lora_target":
                self.handlers[key](key, value)
        if adapters:
            if data.get("lora_alpha") is None:  # LLaMA-Factory: lora_alpha = lora_alpha or lora_rank * 2
                self.fields["lora_alpha"] = 2 * int(self.fields.get("lora_r", DEFAULTS["lora_rank"]))
                applied["lora_alpha"] = f"2 × lora_rank = {self.fields['lora_alpha']}"
            self.targets("lora_target", raw.get("lora_target", DEFAULTS["lora_target"]))
        self.precision(raw.get("bf16") or raw.get("pure_bf16"), raw.get("fp16"), ("bf16", "fp16"))
        if self.flag(raw.get("pure_bf16")):
            self.not_carried("pure_bf16", "DeepSpeed keeps fp32 master weights; the plan trains in bf16 mixed "
                             "precision", True)
        # LLaMA-Factory checkpoints activations unless told not to (disable_gradient_checkpointing).
        self.fields["grad_ckpt"] = bool(self.flag(raw.get("gradient_checkpointing"))
                                        or not self.flag(raw.get("disable_gradient_checkpointing") or False))
        if "warmup_ratio" in raw:
            self.warmup_ratio("warmup_ratio", raw["warmup_ratio"])
        if raw.get("dataset") not in (None, ""):
            self.dataset(raw["dataset"], raw.get("dataset_dir") or "data")
        elif raw.get("dataset_dir") not in (None, ""):
            self.not_carried("dataset_dir", "no dataset names a file in it; the plan keeps data: sample")
        if applied:
            self.warn("not in the file, so LLaMA-Factory's own defaults are used: "
                      + ", ".join(f"{k}={v}" for k, v in applied.items()))

    def method(self, kind: str, bits: Any) -> None:
        if kind == "freeze":
            self.not_carried("finetuning_type", "zerotui trains every weight (full) or adapters; the plan trains "
                             "every weight (more memory than freezing layers)", kind)
            kind = "full"
        if kind not in ("full", "lora"):
            self.refuse(f"finetuning_type: {kind} has no zerotui equivalent", "use full or lora (qlora: lora with "
                        "quantization_bit 4 or 8)")
        if bits is not None and kind != "lora":
            self.refuse(f"quantization_bit: {bits} with finetuning_type {kind}: a quantised base trains adapters only",
                        "use finetuning_type: lora, or remove quantization_bit")
        if bits is not None and bits not in (4, 8):
            self.refuse(f"quantization_bit: {bits}: zerotui's QLoRA stores the base in 4 or 8 bits",
                        "use quantization_bit: 4 or 8")
        self.fields["method"] = "full" if kind == "full" else "qlora" if bits else "lora"
        if bits:
            self.fields["quant_bits"] = bits

    def dataset(self, value: Any, folder_name: str) -> None:
        names = value if isinstance(value, list) else [n.strip() for n in str(value).split(",") if n.strip()]
        if not names:
            return
        if len(names) > 1:
            self.not_carried(f"dataset: {', '.join(map(str, names[1:]))}", f"zerotui trains on one data source; "
                             f"the plan uses the first, {names[0]}")
        name = str(names[0])
        folder = self.resolve(folder_name)
        info = _dataset_info(folder)
        entry = info.get(name) if isinstance(info.get(name), dict) else None
        if entry is None and not Path(name).suffix:
            where = (f"{folder}/dataset_info.json, which does not list it" if info
                     else f"{folder_name}/dataset_info.json, which is not here")
            self.not_carried("dataset", f"LLaMA-Factory looks such a name up in {where}; the plan keeps data: "
                             "sample — give --data FILE.jsonl", name)
            return
        if entry is None:
            data = self.data_file("dataset", name, *([folder] if folder else []))
            if data is not None:
                self.fields["data"] = data
                if self.data.get("stage") == "pt":
                    self.fields["data_format"] = "text"
            return
        self.dataset_entry(name, entry, folder)

    def dataset_entry(self, name: str, entry: dict[str, Any], folder: Path) -> None:
        """An entry of dataset_info.json: its file (or hub id), format and columns."""
        key = f"dataset: {name}"
        if entry.get("file_name"):
            data = self.data_file(key, folder / str(entry["file_name"]))  # LLaMA-Factory joins them
        elif entry.get("hf_hub_url"):
            data = f"hub:{entry['hf_hub_url']}"
        else:
            self.not_carried(key, "its dataset_info.json entry names no file_name or hf_hub_url; the plan keeps "
                             "data: sample — give --data FILE")
            return
        if data is None:
            return
        self.fields["data"] = data
        formatting, cols = entry.get("formatting", "alpaca"), entry.get("columns") or {}
        if self.data.get("stage") == "pt":
            self.fields.update(data_format="text", text_field=cols.get("prompt", "text"))
        elif formatting == "sharegpt":
            self.fields.update(data_format="chat", messages_field=cols.get("messages", "conversations"))
        elif formatting == "alpaca" and {cols.get("prompt", "instruction"), cols.get("response", "output")} == {
                "instruction", "output"}:
            self.fields["data_format"] = "alpaca"
        elif formatting == "alpaca" and "query" not in cols:
            self.fields.update(data_format="prompt_response", prompt_field=cols.get("prompt", "instruction"),
                               response_field=cols.get("response", "output"))
        else:
            self.not_carried(f"{key} columns", "zerotui detects the format from the rows (--data-format to choose)",
                             cols or formatting)


def _dataset_info(folder: Any) -> dict[str, Any]:
    """LLaMA-Factory's dataset_info.json in ``dataset_dir``; {} when absent or unreadable."""
    if folder is None or not (folder / "dataset_info.json").is_file():
        return {}
    try:
        info = load_json(read_text(folder / "dataset_info.json", DS_CONFIG_BYTES))
    except (OSError, ValueError):  # UnicodeDecodeError, JSONDecodeError and ValueProblem are ValueErrors
        return {}
    return info if isinstance(info, dict) else {}
