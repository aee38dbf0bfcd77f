"""The peer: the Hugging Face Trainer with the same DeepSpeed config, model folder and token sequences.

    python -m benchmarks.throughput.trainer_side RUN_DIR OUT.json [--packed]

Reads the run folder zerotui's side uses (plan.yaml for the batch shape and optimizer numbers,
ds_config.json as DeepSpeed gets it), and feeds the Trainer exactly the sequences zerotui tokenised (the
shared tokenised cache), all of length seq_len. Timing: every ``log_interval`` optimizer steps, after a
device sync, like zerotui's own step events; the Trainer's own loss logging is off so it adds no syncs.

A plan with ``packing: true`` (cases c and d: documents of many lengths) is zerotui's side only: the Trainer gets
the same documents unpacked, one a row, each micro-batch padded to its longest row (as its padding
collators do). Tokens are counted as zerotui counts them, the real (non-padding) tokens of every forward
(``attention_mask``'s sum, read on the device at the timing syncs).

``--packed`` gives the Trainer transformers' own packing collator instead (``DataCollatorWithFlattening``:
a micro-batch's documents joined into one row with per-document ``position_ids``, from which transformers
builds a per-document mask), so case c also measures the Trainer as a user who packs runs it. Every token
of such a row is real.
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
    packed = "--packed" in sys.argv[3:]
    _env()
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainerCallback, TrainingArguments

    from zerotui.core.data.prepare import prepare_data
    from zerotui.core.model.load import load_tokenizer
    from zerotui.core.plan.schema import load_plan

    from zerotui.core.data.tokenise import collate

    plan = load_plan(run_dir / "plan.yaml")
    ds_config = json.loads((run_dir / "ds_config.json").read_text())
    data = prepare_data(plan.with_changes(packing=False), load_tokenizer(plan))
    train = data.train

    class Sequences(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(train)

        def __getitem__(self, i: int) -> tuple:
            return train.example(i)

    def pad_to_longest(rows: list[tuple]) -> dict:
        return collate(rows, data.pad_id, plan.seq_len)

    if packed:
        from transformers import DataCollatorWithFlattening

        flatten = DataCollatorWithFlattening(return_position_ids=True)

        def collator(rows: list[tuple]) -> dict:
            return flatten([{"input_ids": ids.tolist(), "labels": lab.tolist()} for ids, lab in rows])
    else:
        collator = pad_to_longest

    marks: list[tuple[int, float, float]] = []  # (step, time, real tokens so far)
    seen: list = []  # one device tensor: the real tokens of every forward so far (no sync per step)
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
                marks.append((state.global_step, time.perf_counter(), float(seen[0]) if seen else 0.0))

    model = AutoModelForCausalLM.from_pretrained(str(plan.model), dtype=torch.bfloat16,
                                                 attn_implementation="sdpa")

    def count(_module, _args, kwargs):
        mask = kwargs.get("attention_mask")
        n = mask.sum() if mask is not None else torch.tensor(kwargs["input_ids"].numel(), device=kwargs["input_ids"].device)
        if seen:
            seen[0] += n
        else:
            seen.append(n.clone())

    model.register_forward_pre_hook(count, with_kwargs=True)
    model.config.use_cache = False  # no KV cache: transformers reads packed documents from position_ids only then
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
        trainer = Trainer(model=model, args=args, train_dataset=Sequences(), data_collator=collator,
                          callbacks=[Timer()])
        trainer.train()
    rates = [(b[0], (b[2] - a[2]) / (b[1] - a[1])) for a, b in zip(marks, marks[1:])]
    out.write_text(json.dumps({"process_start": t0, "first_step": first_step[0] if first_step else None,
                               "tokens_per_s": rates, "use_cache": bool(model.config.use_cache)}))
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
