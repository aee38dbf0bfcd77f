"""The peer: the Hugging Face Trainer with the same DeepSpeed config, model folder and token sequences.

    python -m benchmarks.throughput.trainer_side RUN_DIR OUT.json

Reads the run folder zerotui's side uses (plan.yaml for the batch shape and optimizer numbers,
ds_config.json as DeepSpeed gets it), and feeds the Trainer exactly the sequences zerotui tokenised (the
shared tokenised cache), all of length seq_len. Timing: every ``log_interval`` optimizer steps, after a
device sync, like zerotui's own step events; the Trainer's own loss logging is off so it adds no syncs.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path


def _env() -> None:
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


def main() -> int:
    t0 = time.time()
    run_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    _env()
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainerCallback, TrainingArguments

    from zerotui.core.data.prepare import prepare_data
    from zerotui.core.model.load import load_tokenizer
    from zerotui.core.plan.schema import load_plan

    plan = load_plan(run_dir / "plan.yaml")
    ds_config = json.loads((run_dir / "ds_config.json").read_text())
    data = prepare_data(plan, load_tokenizer(plan))
    train = data.train

    class Sequences(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(train)

        def __getitem__(self, i: int) -> dict:
            ids, labels = train.example(i)
            return {"input_ids": ids.long(), "labels": labels.long(), "attention_mask": torch.ones_like(ids).long()}

    marks: list[tuple[int, float]] = []
    first_step: list[float] = []
    cuda = torch.cuda.is_available()

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if not first_step:
                first_step.append(time.time())

        def on_step_end(self, args, state, control, **kw):
            if state.global_step % plan.log_interval == 0:
                if cuda:
                    torch.cuda.synchronize()
                marks.append((state.global_step, time.perf_counter()))

    model = AutoModelForCausalLM.from_pretrained(str(plan.model), dtype=torch.bfloat16,
                                                 attn_implementation="sdpa")
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(
            output_dir=tmp, per_device_train_batch_size=plan.micro_batch,
            gradient_accumulation_steps=plan.grad_accum, max_steps=plan.max_steps,
            learning_rate=plan.lr, weight_decay=plan.weight_decay, adam_beta1=plan.adam_beta1,
            adam_beta2=plan.adam_beta2, adam_epsilon=plan.adam_eps, max_grad_norm=plan.grad_clip,
            warmup_steps=plan.warmup_steps, lr_scheduler_type=plan.lr_schedule, bf16=True,
            deepspeed=ds_config, logging_strategy="no", save_strategy="no", report_to=[],
            disable_tqdm=True, dataloader_num_workers=0, remove_unused_columns=False, seed=plan.seed,
            use_cpu=not cuda, gradient_checkpointing=plan.grad_ckpt,
            use_liger_kernel=plan.kernels == "liger")  # the same Liger kernels zerotui's plan asks for
        trainer = Trainer(model=model, args=args, train_dataset=Sequences(), callbacks=[Timer()])
        trainer.train()
    tokens_per_step = plan.micro_batch * plan.grad_accum * plan.seq_len
    rates = [(b[0], (b[0] - a[0]) * tokens_per_step / (b[1] - a[1])) for a, b in zip(marks, marks[1:])]
    out.write_text(json.dumps({"process_start": t0, "first_step": first_step[0] if first_step else None,
                               "tokens_per_s": rates, "use_cache": bool(model.config.use_cache)}))
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
