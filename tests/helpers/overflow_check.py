"""Run as ``python tests/helpers/overflow_check.py PORT``: a real DeepSpeed ZeRO-3 optimizer on the CPU, given
zerotui's overflow check (core/train/overflow_check.py); prints one JSON line with what DeepSpeed's own
``has_overflow`` answered through it for finite, +inf, -inf and NaN gradients, and the host memory each
check took beyond the buffer, against DeepSpeed's check unchanged. The CPU refuses fp16 training, so the
optimizer is built in fp32 and told it is fp16 (the check reads no value of that setting but its switch)."""
import json
import os
import sys
import threading
import time

import deepspeed
import psutil
import torch

from zerotui.core.deepspeed.config import optimizer_section
from zerotui.core.plan.schema import Plan
from zerotui.core.train.overflow_check import lean_overflow_check

ELEMENTS = 200_000_000  # a 400 MB fp16 buffer: DeepSpeed's own check takes 3 bytes an element beside it


def make():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    cfg = {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 3},
           "optimizer": optimizer_section(Plan(model="x", lr=1e-2))}
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    return engine


def peak_rss_during(fn):
    """(the most RSS above the start while ``fn`` ran, its result), sampled every millisecond."""
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak, done = [base], [False]

    def watch():
        while not done[0]:
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.001)
    t = threading.Thread(target=watch)
    t.start()
    try:
        result = fn()
    finally:
        done[0] = True
        t.join()
    return peak[0] - base, result


def main(port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    engine = make()
    opt = engine.optimizer
    untouched = lean_overflow_check(opt)  # fp32: DeepSpeed checks nothing, nothing is given
    buf = torch.zeros(ELEMENTS, dtype=torch.float16)
    buf.add_(1)  # resident, as a gradient partition is
    opt.grad_partitions_flat_buffer = buf
    opt.dtype = torch.float16
    original = opt.has_overflow
    own_bytes, own_finite = peak_rss_during(lambda: original())
    installed = lean_overflow_check(opt)
    answers, extra = {}, 0
    for name, value in (("finite", None), ("+inf", float("inf")), ("-inf", float("-inf")), ("nan", float("nan"))):
        if value is not None:
            buf[ELEMENTS // 3] = value
        used, answers[name] = peak_rss_during(lambda: opt.has_overflow())
        extra = max(extra, used)
        buf[ELEMENTS // 3] = 1
    print(json.dumps({"given_for_fp32": untouched, "given": installed, "answers": answers,
                      "deepspeed_finite": own_finite, "buffer_bytes": buf.numel() * buf.element_size(),
                      "deepspeed_check_bytes": own_bytes, "check_bytes": extra,
                      "buffer_restored": opt.grad_partitions_flat_buffer is buf,
                      "tracker_cleared": not bool(opt.inf_or_nan_tracker.item())}))


if __name__ == "__main__":
    main(int(sys.argv[1]))
